import { randomBytes } from "node:crypto";
import { type BankView, bankView } from "./compile/bank-view.ts";
import { ChatRoles } from "./compile/chat-roles.ts";
import { type BankedReport, type CompilerContext, compileIntoBank, compilePrograms } from "./compile/compile-bank.ts";
import { type CompileConfig, defaultCompileConfig } from "./compile/compile-config.ts";
import type { CompileReport } from "./compile/compile-session.ts";
import { compiledSearch, PreparedBanks, textEmbedder } from "./compile/compiled-search.ts";
import { type ReverifyReport, reverifyBank } from "./compile/reverify.ts";
import type { CompileRoles } from "./compile/roles.ts";
import { ruleRoles } from "./compile/rule-roles.ts";
import { ConfigError, InputError, ModelMismatchError, NotFoundError } from "./core/errors.ts";
import { KeyedQueue } from "./core/keyed-queue.ts";
import { type Scope, scopeKey, validateScope } from "./core/scope.ts";
import { type Budget, defaultBudget } from "./evidence/budget.ts";
import type { EvidencePack } from "./evidence/evidence-pack.ts";
import type { IntakeOptions } from "./ingest/image-intake.ts";
import { defaultIngestLimits, type IngestLimits } from "./ingest/limits.ts";
import { type PreparedSession, prepareSession, prepareSessions, validateSession } from "./ingest/prepare-session.ts";
import { type RememberOptions, type RememberResult, remember } from "./ingest/remember.ts";
import {
  ActiveIndexCache,
  type CommitContext,
  commitBatchWithMaintenance,
  commitWithMaintenance,
} from "./maintain/commit-session.ts";
import { defaultMaintenanceConfig, type MaintenanceConfig } from "./maintain/config.ts";
import { forgetWithRepair } from "./maintain/forget.ts";
import { resolveJudge } from "./maintain/judge.ts";
import { Ramu } from "./maintain/ramu.ts";
import { type ReembedResult, reembedScope } from "./maintain/reembed.ts";
import {
  checkScopeIndex,
  type IndexCheck,
  type IndexRepair,
  listPublicEntries,
  rebuildScopeIndex,
  repairScopeIndex,
} from "./maintain/scope-index.ts";
import type { AddSessionOptions, AddSessionResult, AppendTurnsOptions, MemoryOptions } from "./memory-options.ts";
import { EmbeddingCache } from "./models/embedding-cache.ts";
import type { Models } from "./models/provider.ts";
import { type VectorSpaces, vectorSpaces } from "./models/vector-spaces.ts";
import { ActiveEntriesCache, LinkedEntriesCache } from "./route/index-caches.ts";
import { type SearchContext, type SearchOptions, type SearchQuery, search } from "./route/search.ts";
import { defaultSearchConfig, type SearchConfig } from "./route/search-config.ts";
import type { BankProgram } from "./store/bank-records.ts";
import type { IndexState, MaintenancePlan } from "./store/index-records.ts";
import { defaultIndexTextConfig, type IndexTextConfig, storedIndexTexts } from "./store/index-text.ts";
import { openStore } from "./store/open-store.ts";
import type {
  AuditEvent,
  BlobRecord,
  CommitResult,
  Entry,
  ForgetResult,
  ForgetTarget,
  RawNode,
  ScopeStats,
  SessionRecord,
} from "./store/records.ts";
import type { ScopedStore, Store } from "./store/store.ts";
import type { VideoItem } from "./store/video-records.ts";
import { type EnrolPhoto, enrolEntity } from "./video/enrol.ts";
import { parseVideoSource, type VideoSource } from "./video/gateway.ts";
import type { Detector } from "./video/perception/detector.ts";
import { createLocalDetector } from "./video/perception/local-detector.ts";
import { NotificationHub, type VideoNotification } from "./video/procedural/deliveries.ts";
import { addRule, listNotifications, listRules, removeRule } from "./video/procedural/rule-store.ts";
import type { RuleInput } from "./video/procedural/rules.ts";
import { type EntityMemory, entityMemory, listFacts, type ScopeFact } from "./video/semantic/entity-memory.ts";
import { answerFromVideo, type VideoAnswer } from "./video/video-answer.ts";
import { type VideoConfig, videoConfig } from "./video/video-config.ts";
import { type EntitySummary, listEntities, mergeEntities, nameEntity, splitEntity } from "./video/video-entities.ts";
import {
  type EpisodicLevel,
  getWithNeighbours,
  type KeyFrame,
  keyFramesOf,
  listMoments,
  listSources,
  searchLevel,
  type VideoHit,
  type VideoSourceSummary,
} from "./video/video-queries.ts";
import { startWatch, type VideoWatch, type WatchOptions } from "./video/watch.ts";

export type { BankEntryView, BankView, RetiredView } from "./compile/bank-view.ts";
export type { BankedReport } from "./compile/compile-bank.ts";
export type { ReverifyReport } from "./compile/reverify.ts";
export type { IndexCheck, IndexRepair } from "./maintain/scope-index.ts";

/** What `repairLexicalIndex` found, whether it rebuilt, and what a check finds afterwards. */
export interface LexicalRepair {
  readonly before: readonly string[];
  readonly rebuilt: boolean;
  readonly after: readonly string[];
}
export type { AddSessionOptions, AddSessionResult, AppendTurnsOptions, MemoryOptions } from "./memory-options.ts";
export type { SearchOptions, SearchQuery } from "./route/search.ts";
export type { DeliveryResult, VideoNotification } from "./video/procedural/deliveries.ts";
export type { RuleCondition, RuleInput } from "./video/procedural/rules.ts";
export type { EntityFact, EntityMemory, ScopeFact } from "./video/semantic/entity-memory.ts";
export type { VideoAnswer } from "./video/video-answer.ts";
export type { EntitySummary } from "./video/video-entities.ts";
export type { EpisodicLevel, KeyFrame, VideoHit, VideoSourceSummary } from "./video/video-queries.ts";
export type { SegmentReport, VideoWatch, WatchOptions, WatchResult } from "./video/watch.ts";

/** Query embeddings kept per memory: agents and benchmarks repeat questions; the embedder is a search's slowest step. */
const queryEmbeddingCacheSize = 256;
/** Scopes whose active entries (and linked entries) stay cached between searches. */
const activeIndexCacheSize = 64;
/**
 * Linked entries (overflowed guests, earlier states) kept between searches over all scopes: a few
 * thousand decoded digests (~10 KB each, ~40 MB at most), enough for the hosts a 100k-node scope's
 * searches reach again and again (decision 033).
 */
const linkedEntriesCacheSize = 4_096;

/** Audit events `listAudit` returns when no limit is given: a screenful for a dashboard. */
const defaultAuditPage = 100;

/** The harness's way to read through another index than the stored one (not part of the public SDK). */
export const searchThroughIndex = Symbol("cairn.searchThroughIndex");
/** The harness's way to search through a bank held in memory instead of the stored one (not public). */
export const searchThroughBank = Symbol("cairn.searchThroughBank");
/** The harness's way to compile a session with other settings or roles, without banking it (not public). */
export const compileWithout = Symbol("cairn.compileWithout");
/** The harness's way to reach a scope's store handle (not part of the public SDK). */
export const scopedStore = Symbol("cairn.scopedStore");

/**
 * The SDK. Raw observations go into an immutable cold store; search answers with an evidence
 * pack of original text and images under a joint budget. A facade: the write pipeline lives in
 * `ingest/` and `maintain/`, the read pipeline in `route/`.
 *
 * @example
 * const memory = await Memory.open({ path: ".cairn", models: createHashModels() });
 * await memory.addSession({ tenant: "acme", user: "ana" }, { session: "s1", time: "2024-05-08T13:56:00Z",
 *   turns: [{ speaker: "Ana", text: "I adopted a corgi named Biscuit" }] });
 * const pack = await memory.search({ tenant: "acme", user: "ana" }, "what dog did Ana get?");
 * await memory.close();
 */
export class Memory {
  readonly models: Models;
  readonly budget: Budget;
  readonly searchConfig: SearchConfig;
  readonly limits: IngestLimits;
  /** What raw nodes are searchable by besides their text (contextual index text; DESIGN §4 defaults). */
  readonly indexText: IndexTextConfig;
  readonly maintenance: MaintenanceConfig;
  /** Prospective compilation's settings (PMMC; docs/decisions/010). */
  readonly compileConfig: CompileConfig;
  /** The vector spaces this memory's models write and read (names carry the model ids). */
  readonly spaces: VectorSpaces;
  readonly #store: Store;
  /** What maintenance needs to plan: the policy (RAMU with the configured judge), settings, spaces, ids, clock. */
  readonly #maintainer: CommitContext;
  readonly #options: MemoryOptions;
  readonly #writeLocks = new KeyedQueue();
  /** Question banks made ready for matching, kept while a scope's bank holds the same programs. */
  readonly #preparedBanks = new PreparedBanks();
  /** Scopes whose stored vectors these models made (see `#checkModels`). */
  readonly #modelsChecked = new Set<string>();
  /** The clock that stamps appended turns and notes given no time, and maintenance's decisions. */
  readonly #now: () => number;
  readonly #reader: SearchContext;
  readonly #activeEntries = new ActiveEntriesCache(activeIndexCacheSize);
  readonly #linkedEntries = new LinkedEntriesCache(linkedEntriesCacheSize, activeIndexCacheSize);
  readonly #compiler: CompilerContext;
  /** Settings of the video pipeline (`watch`). */
  readonly video: VideoConfig;
  #detector: Detector | undefined;
  /** Where the notifier's deliveries go: live listeners (SSE) and the configured webhooks. */
  readonly #notifications = new NotificationHub();
  /** Running watches per scope: stream name → start time (the source view's live status). */
  readonly #watching = new Map<string, Map<string, number>>();
  #closed = false;

  private constructor(store: Store, options: MemoryOptions) {
    this.#store = store;
    this.#now = options.now ?? Date.now;
    this.models = options.models;
    this.spaces = vectorSpaces(options.models);
    this.budget = Object.freeze({ ...defaultBudget, ...options.budget });
    this.searchConfig = Object.freeze({
      ...defaultSearchConfig,
      ...options.search,
      routing: Object.freeze({ ...defaultSearchConfig.routing, ...options.search?.routing }),
    });
    this.limits = Object.freeze({ ...defaultIngestLimits, ...options.limits });
    this.indexText = Object.freeze({ ...defaultIndexTextConfig, ...options.indexText });
    this.maintenance = Object.freeze({
      ...defaultMaintenanceConfig,
      ...options.maintenance,
      bounds: Object.freeze({ ...defaultMaintenanceConfig.bounds, ...options.maintenance?.bounds }),
    });
    this.#maintainer = Object.freeze({
      policy: new Ramu(this.maintenance, resolveJudge(options.judge ?? "comparator", options.models)),
      config: this.maintenance,
      spaces: this.spaces,
      newId: newEntryId,
      now: this.#now,
      activeIndex: new ActiveIndexCache(activeIndexCacheSize),
    });
    const { roles, unit, ...compile } = options.compile ?? {};
    this.compileConfig = Object.freeze({
      ...defaultCompileConfig,
      ...compile,
      unit: Object.freeze({ ...defaultCompileConfig.unit, ...unit }),
    });
    this.#options = options;
    this.video = videoConfig(options.video?.config);
    this.#detector = options.video?.detector;
    this.#reader = Object.freeze({
      models: this.models,
      spaces: this.spaces,
      budget: this.budget,
      config: this.searchConfig,
      limits: this.limits,
      queryEmbeddings: new EmbeddingCache(queryEmbeddingCacheSize),
      routingIndex: async (scoped: ScopedStore) => {
        const version = await this.#ensureIndex(scoped);
        return {
          active: await this.#activeEntries.get(scoped, version),
          linked: this.#linkedEntries.reader(scoped, version),
        };
      },
    });
    this.#compiler = Object.freeze({
      models: this.models,
      spaces: this.spaces,
      config: this.compileConfig,
      roles: resolveRoles(roles ?? "rules", options.models),
      rrfK: this.searchConfig.rrfK,
      window: this.budget.rawNodes,
      embedText: textEmbedder(this.#reader),
      now: Date.now,
    });
  }

  static async open(options: MemoryOptions): Promise<Memory> {
    // A backend loads only when no store is given: SQLite for a folder, Postgres for a URL.
    const store = options.store ?? (await openStore(options.path ?? ".cairn"));
    return new Memory(store, options);
  }

  /**
   * Checks a session exactly as `addSession` would (schema, limits, every image loaded and
   * decoded) without writing anything, so a caller can reject a whole batch before the first write.
   * `contentHash` is what the stored session would carry: a key already stored with another hash
   * would be a `ConflictError` in `addSession`.
   */
  async validateSession(
    input: unknown,
    options: AddSessionOptions = {},
  ): Promise<{ sessionKey: string; turns: number; images: number; contentHash: string }> {
    const { sessionImages: _images, ...checked } = await validateSession(input, this.#intake(options));
    return checked;
  }

  /** What preparing a session (validation, image intake, index text, embedding) needs for these options. */
  #preparation(options: AddSessionOptions) {
    return {
      models: this.models,
      spaces: this.spaces,
      intake: this.#intake(options),
      readImages: options.readImages,
      indexText: this.indexText,
    };
  }

  /** Validates, embeds and commits one session atomically; a rejected session changes nothing. */
  async addSession(scope: Scope, input: unknown, options: AddSessionOptions = {}): Promise<AddSessionResult> {
    const scoped = this.#scoped(scope);
    const prepared = await prepareSession(scoped, input, this.#preparation(options));
    return this.#commit(scoped, prepared.write, prepared.warnings);
  }

  /**
   * Adds several sessions of one scope in one transaction: each is validated and embedded first (a few at once)
   * (any bad one is a typed error naming its position, and nothing is written), then maintenance
   * plans them in order exactly as one `addSession` after another would, and all of them are
   * committed together, so the store's durable commit (SQLite: one fsync) is paid once for the
   * lot. All land or none does; when the promise resolves every one is committed. Results follow
   * the inputs' order; a session already stored (or given twice) is a duplicate, as in `addSession`.
   * Every prepared session is held in memory until the commit: the caller picks the batch size
   * (`cairn ingest --batch`).
   * @example await memory.addSessions(scope, [{ session: "s1", turns: [{ text: "hi" }] }, { session: "s2", turns: [{ text: "again" }] }]);
   */
  async addSessions(
    scope: Scope,
    inputs: readonly unknown[],
    options: AddSessionOptions = {},
  ): Promise<AddSessionResult[]> {
    if (!Array.isArray(inputs)) throw new InputError("sessions", "give an array of sessions");
    const scoped = this.#scoped(scope);
    const prepared = await prepareSessions(scoped, inputs, this.#preparation(options));
    if (prepared.length === 0) return [];
    const mismatch = await this.#checkModels(scoped);
    await this.#ensureIndex(scoped);
    const landed = await this.#writeLocks.run(scopeKey(scoped.scope), () =>
      commitBatchWithMaintenance(
        scoped,
        prepared.map((session) => session.write),
        this.#maintainer,
      ),
    );
    const results: AddSessionResult[] = [];
    for (const [index, { result, plan }] of landed.entries()) {
      const warnings = [...(prepared[index]?.warnings ?? []), ...(mismatch ? [mismatch] : [])];
      results.push(await this.#acknowledge(scoped, result, plan, warnings));
    }
    return results;
  }

  async #commit(
    scoped: ScopedStore,
    write: PreparedSession["write"],
    prepared: readonly string[],
  ): Promise<AddSessionResult> {
    let warnings = prepared;
    const mismatch = await this.#checkModels(scoped);
    if (mismatch) warnings = [...warnings, mismatch];
    await this.#ensureIndex(scoped);
    // Writers of one scope in this process take turns to plan and commit (planning takes
    // milliseconds); across processes a stale plan is made again (commitWithMaintenance).
    const { result, plan } = await this.#writeLocks.run(scopeKey(scoped.scope), () =>
      commitWithMaintenance(scoped, write, this.#maintainer),
    );
    return this.#acknowledge(scoped, result, plan, warnings);
  }

  /** A committed session's answer, after compiling it into the bank when `compile.onCommit` is on. */
  async #acknowledge(
    scoped: ScopedStore,
    result: CommitResult,
    plan: MaintenancePlan,
    warnings: readonly string[],
  ): Promise<AddSessionResult> {
    const compileWarnings: string[] = [];
    if (this.compileConfig.onCommit && !result.duplicate) {
      // By name, so a session that grew by an append is compiled again rather than twice.
      for (const report of await this.compile(scoped.scope, { session: result.session.key })) {
        compileWarnings.push(...report.warnings);
      }
    }
    return {
      sessionId: result.session.id,
      sessionKey: result.session.key,
      rawNodeIds: result.rawNodeIds,
      entryIds: result.entryIds,
      maintenance: { actions: plan.audits.map((audit) => audit.action), overflowRepairs: plan.overflowRepairs },
      duplicate: result.duplicate,
      warnings: [...warnings, ...plan.warnings, ...compileWarnings],
    };
  }

  /**
   * Appends turns to the session `sessionKey` (creating it when it is not stored yet): new immutable
   * raw nodes after its last turn, earlier ones untouched, and maintenance plans for the new segment
   * against the active index as it is now. `input` is `{ turns, time?, source? }` as in a session;
   * `time` (default: now) stamps turns that carry none. A retry is acknowledged, not appended twice:
   * the same turns appended to one session again are a duplicate (`partKey` names the part
   * explicitly, e.g. to append the same words twice on purpose). Atomic like `addSession`.
   * @example await memory.appendTurns(scope, "chat-7", { turns: [{ speaker: "Ana", text: "and a red helmet" }] });
   */
  async appendTurns(
    scope: Scope,
    sessionKey: string,
    input: unknown,
    options: AppendTurnsOptions = {},
  ): Promise<AddSessionResult> {
    if (typeof input !== "object" || input === null || Array.isArray(input)) {
      throw new InputError("input", "give an object { turns, time?, source? }");
    }
    const given = input as Record<string, unknown>;
    if (given.session !== undefined && given.session !== sessionKey) {
      throw new InputError("session", `names another session than ${JSON.stringify(sessionKey)}`);
    }
    if (
      options.partKey !== undefined &&
      (typeof options.partKey !== "string" || !/^\S{1,256}$/.test(options.partKey))
    ) {
      throw new InputError("partKey", "1-256 characters without spaces");
    }
    const session = { ...given, session: sessionKey, time: given.time ?? new Date(this.#now()).toISOString() };
    const scoped = this.#scoped(scope);
    const prepared = await prepareSession(scoped, session, this.#preparation(options));
    const write = { ...prepared.write, append: { partKey: options.partKey ?? `turns:${prepared.turnsHash}` } };
    return this.#commit(scoped, write, prepared.warnings);
  }

  /**
   * Files one note (text, images or both) at the current time as its own session keyed
   * `remember/<conversation or "day">/<YYYY-MM-DD>/<n>`; validated and written like `addSession`.
   * @example await memory.remember(scope, "Ana's bike has a 54 cm frame", { images: [{ path: "bike.png" }] });
   */
  async remember(scope: Scope, text: string, options: RememberOptions = {}): Promise<RememberResult> {
    return remember(this, scope, text, options, () => new Date(this.#now()));
  }

  /**
   * An evidence pack for a query: routed through the active index and the direct channels (BM25,
   * dense text, image), packed under the joint budget.
   * @example const pack = await memory.search(scope, "the red bicycle", { budget: { images: 2 } });
   */
  async search(scope: Scope, query: string | SearchQuery, options: SearchOptions = {}): Promise<EvidencePack> {
    if ((options.mode ?? this.searchConfig.mode) === "compiled") return this[searchThroughBank](scope, query, options);
    return this[searchThroughIndex](scope, query, options);
  }

  async [searchThroughBank](
    scope: Scope,
    query: string | SearchQuery,
    options: SearchOptions,
    bank?: readonly BankProgram[],
    /** Routing settings a harness method changes (the `pmmc-fused` method fuses below the gate). */
    config?: Partial<CompileConfig>,
  ): Promise<EvidencePack> {
    const scoped = this.#scoped(scope);
    const mismatch = await this.#checkModels(scoped);
    const pack = await compiledSearch(
      scoped,
      query,
      options,
      {
        reader: this.#reader,
        config: { ...this.compileConfig, ...config },
        fallback: (fallbackOptions) => search(scoped, query, fallbackOptions, this.#reader),
        prepared: this.#preparedBanks,
      },
      bank,
    );
    return mismatch ? { ...pack, warnings: [...pack.warnings, mismatch] } : pack;
  }

  /**
   * Prospective compilation (PMMC), e.g. at consolidation time: for each session not compiled yet
   * (in time order), predict questions about it, plan a retrieval program for each, prove it on the
   * history as it stood, and bank the verified ones. Query-blind; audited (`bank.admit`). With
   * `session`, that session is compiled again: its banked programs are retired (`bank.retire`) and
   * replaced by the new ones, proved against the history as it stands now.
   * @example const [report] = await memory.compile(scope, { session: "s1" }); report.banked.length
   */
  async compile(scope: Scope, options: { readonly session?: string } = {}): Promise<BankedReport[]> {
    const scoped = this.#scoped(scope);
    await this.#ensureIndex(scoped);
    await this.#reverify(scoped);
    // A program's anchor is the last session of its unit: the session it was compiled for.
    const anchored = new Map<string, BankProgram[]>();
    for (const program of await scoped.readBank()) {
      const anchor = program.sessions.at(-1);
      if (anchor !== undefined) anchored.set(anchor, [...(anchored.get(anchor) ?? []), program]);
    }
    if (options.session !== undefined) {
      const { key } = await this.getSession(scope, options.session);
      const previous = anchored.get(key) ?? [];
      if (previous.length > 0) {
        await scoped.retirePrograms(
          previous.map((program) => program.id),
          {
            action: "bank.retire",
            subject: key,
            details: {
              reason: "recompiled",
              programs: previous.map((program) => ({ id: program.id, question: program.question })),
            },
          },
        );
      }
      return [await this.#compile(scoped, key)];
    }
    const reports: BankedReport[] = [];
    for (const session of await scoped.readSessions({})) {
      if (!anchored.has(session.key)) reports.push(await this.#compile(scoped, session.key));
    }
    return reports;
  }

  async [compileWithout](
    scope: Scope,
    session: string,
    overrides: { readonly config?: Partial<CompileConfig>; readonly roles?: CompileRoles },
  ): Promise<{ report: CompileReport; programs: BankProgram[] }> {
    const scoped = this.#scoped(scope);
    const config = { ...this.compileConfig, ...overrides.config };
    const context = { ...this.#compiler, config, roles: overrides.roles ?? this.#compiler.roles };
    return compilePrograms(scoped, session, context);
  }

  /**
   * Re-verifies banked programs whose evidence maintenance superseded since they were last proved:
   * each is run on the current state and refreshed (`bank.reverify`) or retired (`bank.retire`,
   * reason `superseded`). `compile()` does this first; see compile/reverify.ts for the checks.
   * @example const { refreshed, retired } = await memory.reverifyBank(scope);
   */
  async reverifyBank(scope: Scope): Promise<ReverifyReport> {
    const scoped = this.#scoped(scope);
    await this.#ensureIndex(scoped);
    return this.#reverify(scoped);
  }

  /** The scope's question bank: predicted questions, their programs and verification, oldest first. */
  async listPrograms(scope: Scope, options?: { limit?: number; offset?: number }): Promise<BankProgram[]> {
    return this.#scoped(scope).readBank(options ?? {});
  }

  /**
   * The bank as the dashboard browses it: a page of active programs (question, DAG, verification,
   * evidence) and the programs retired within the latest `auditWindow` audit events, with why.
   * @example const { programs, retired } = await memory.bankView(scope, { limit: 50 });
   */
  async bankView(
    scope: Scope,
    options: { limit?: number; offset?: number; auditWindow?: number } = {},
  ): Promise<BankView> {
    const scoped = this.#scoped(scope);
    const programs = await scoped.readBank({
      ...(options.limit !== undefined ? { limit: options.limit } : {}),
      ...(options.offset !== undefined ? { offset: options.offset } : {}),
    });
    const audit = await scoped.readAudit({ limit: options.auditWindow ?? 1000 });
    return bankView(programs, audit);
  }

  async [searchThroughIndex](
    scope: Scope,
    query: string | SearchQuery,
    options: SearchOptions,
    index?: IndexState,
  ): Promise<EvidencePack> {
    const scoped = this.#scoped(scope);
    const mismatch = await this.#checkModels(scoped);
    const pack = await search(scoped, query, options, this.#reader, index);
    return mismatch ? { ...pack, warnings: [...pack.warnings, mismatch] } : pack;
  }

  /**
   * Whether the scope's stored vectors were made by this memory's models (a space's name carries its
   * model). A mismatch is a `ModelMismatchError`, or with `onModelMismatch: "warn"` the warning to
   * report. A scope found to use these models stays checked; an empty one is asked again next time.
   */
  async #checkModels(scoped: ScopedStore): Promise<string | null> {
    const key = scopeKey(scoped.scope);
    if (this.#modelsChecked.has(key)) return null;
    const ours = new Set([this.spaces.text.name, this.spaces.imageText.name, this.spaces.image?.name]);
    const inUse = await scoped.vectorSpacesInUse();
    const foreign = inUse.filter((space) => !ours.has(space.name));
    if (foreign.length === 0) {
      if (inUse.length > 0) this.#modelsChecked.add(key);
      return null;
    }
    const stored = foreign.map((space) => `${space.name} (${space.dimensions}-d)`);
    const current = [...ours].filter((name): name is string => name !== undefined);
    if ((this.#options.onModelMismatch ?? "error") === "error") throw new ModelMismatchError(stored, current);
    return `this scope's vectors in ${stored.join(", ")} were made by other models than those in use (${current.join(", ")}): they are not searched`;
  }

  [scopedStore](scope: Scope): ScopedStore {
    return this.#scoped(scope);
  }

  /** A session by its id or by its key (the caller's own id). */
  async getSession(scope: Scope, idOrKey: string): Promise<SessionRecord> {
    const scoped = this.#scoped(scope);
    // The key first (the caller's own id); the id only when no key matches.
    const [byKey] = await scoped.readSessions({ keys: [idOrKey] });
    if (byKey) return byKey;
    const [byId] = await scoped.readSessions({ ids: [idOrKey] });
    if (!byId) throw new NotFoundError("session", idOrKey);
    return byId;
  }

  async getRawNode(scope: Scope, id: string): Promise<RawNode> {
    const [node] = await this.#scoped(scope).readRawNodes({ ids: [id] });
    if (!node) throw new NotFoundError("raw node", id);
    return node;
  }

  /** Original bytes of an image (or its 256 px WebP thumbnail) referenced by a raw node of this scope. */
  async getBlob(
    scope: Scope,
    hash: string,
    options: { thumbnail?: boolean } = {},
  ): Promise<{ record: BlobRecord; data: Uint8Array; mediaType: string }> {
    const blob = await this.#scoped(scope).readBlob(hash, options);
    return { ...blob, mediaType: options.thumbnail ? "image/webp" : blob.record.mediaType };
  }

  /** Deletes raw evidence and everything derived from it (vectors, index rows, entries, orphaned blobs); audited. */
  async forget(scope: Scope, target: ForgetTarget): Promise<ForgetResult> {
    const scoped = this.#scoped(scope);
    // In the scope's write queue, like addSession: in-process writers never make each other re-plan.
    // Turns beside a forgotten one quote its gist in their index text: re-derived as a write would make it now.
    const rederive = {
      embedder: this.models.text,
      indexTexts: (nodes: readonly RawNode[]) => storedIndexTexts(nodes, this.indexText),
      neighbours: this.indexText.neighbours,
    };
    return this.#writeLocks.run(scopeKey(scoped.scope), async () => {
      try {
        return await forgetWithRepair(scoped, target, this.spaces, this.maintenance.bounds, rederive);
      } finally {
        // The index version moved, so no search reads these again; dropped now so that no digest
        // quoting forgotten evidence stays in this process's memory until the next search.
        this.#activeEntries.drop(scoped);
        this.#linkedEntries.drop(scoped);
      }
    });
  }

  async listSessions(scope: Scope, options?: { limit?: number; offset?: number }): Promise<SessionRecord[]> {
    return this.#scoped(scope).readSessions(options ?? {});
  }

  async listRawNodes(scope: Scope, sessionId: string): Promise<RawNode[]> {
    return this.#scoped(scope).readRawNodes({ sessionId });
  }

  async listEntries(scope: Scope, options?: { limit?: number; offset?: number }): Promise<Entry[]> {
    return listPublicEntries(this.#scoped(scope), options);
  }

  /**
   * Every scope holding data: for administration (`cairn check`). With `tenant`, that tenant's scopes
   * only, read inside its wall: what a tenant-wide API key may list (`GET /v1/users`).
   */
  async listScopes(options: { readonly tenant?: string } = {}): Promise<Scope[]> {
    return this.#store.listScopes(options);
  }

  /**
   * Verifies DESIGN invariants 2 and 6 on this scope's stored index: every raw node reachable from
   * an active entry or a recorded fallback, links sound, every maintenance action audited, bounds held.
   */
  async checkIndex(scope: Scope): Promise<IndexCheck> {
    const scoped = this.#scoped(scope);
    // A store migrated from before the maintained index builds it first, as a search or a write would.
    await this.#ensureIndex(scoped);
    return checkScopeIndex(scoped, this.maintenance.bounds);
  }

  /**
   * Makes the vectors of a scope (or of every scope) again with this memory's models, after a change
   * of model profile: raw nodes, images and their derived text stay exactly as they are; each
   * scope's vectors are swapped in one transaction (audited as `reembed`), its index rebuilt on the
   * new vectors, and a `ModelMismatchError` for it goes away. A scope whose vectors already come from
   * these models is skipped (so a run that stopped part way can be run again), unless `force`.
   * @example await memory.reembed({ tenant: "acme", user: "ana" }, { onProgress: (done, total) => {} });
   */
  async reembed(
    scope?: Scope,
    options: {
      readonly force?: boolean;
      readonly onProgress?: (progress: { scope: Scope; done: number; total: number }) => void;
    } = {},
  ): Promise<{ scope: Scope; skipped: boolean; result: ReembedResult | null }[]> {
    const scopes = scope ? [scope] : await this.#store.listScopes();
    const ours = new Set([this.spaces.text.name, this.spaces.imageText.name, this.spaces.image?.name]);
    const done: { scope: Scope; skipped: boolean; result: ReembedResult | null }[] = [];
    for (const target of scopes) {
      const scoped = this.#scoped(target);
      const result = await this.#writeLocks.run(scopeKey(scoped.scope), async () => {
        const inUse = await scoped.vectorSpacesInUse();
        const status = await scoped.indexStatus();
        if (!options.force && inUse.every((space) => ours.has(space.name)) && !status.needsRebuild) return null;
        const reembedded = await reembedScope(scoped, {
          models: this.models,
          spaces: this.spaces,
          onProgress: (count, total) => options.onProgress?.({ scope: scoped.scope, done: count, total }),
          // What a write embeds: each turn with its context (decision 018), so re-embedding keeps that lever.
          turnTexts: (turns) => storedIndexTexts(turns, this.indexText),
        });
        await rebuildScopeIndex(scoped, this.#maintainer);
        return reembedded;
      });
      this.#modelsChecked.delete(scopeKey(scoped.scope));
      done.push({ scope: scoped.scope, skipped: result === null, result });
    }
    return done;
  }

  /**
   * Rebuilds a scope's active index by replaying its sessions in time order through maintenance
   * (query-blind, as if they had just arrived). Used after a migration or a change of bounds.
   */
  async rebuildIndex(scope: Scope): Promise<IndexState> {
    return rebuildScopeIndex(this.#scoped(scope), this.#maintainer);
  }

  /**
   * Checks this scope's index and, if it breaks an invariant (a store damaged by an older Cairn),
   * repairs it: unreachable entries are hosted under an active entry, else the index is rebuilt by
   * replay. Both are audited. `cairn check --repair` runs it on every scope.
   *
   * @example
   * const { method, after } = await memory.repairIndex({ tenant: "t", user: "u" });
   */
  async repairIndex(scope: Scope): Promise<IndexRepair> {
    const scoped = this.#scoped(scope);
    await this.#ensureIndex(scoped);
    return repairScopeIndex(scoped, this.#maintainer);
  }

  /**
   * Verifies a tenant's lexical search structures (the BM25 index, its term statistics) against the
   * stored text they were built from: one line per problem, empty when they agree. `cairn check`
   * runs it on every tenant.
   */
  async checkLexicalIndex(tenant: string): Promise<string[]> {
    return this.#store.verifyLexical(tenant);
  }

  /**
   * Checks a tenant's lexical search structures and, when they disagree with the stored text, builds
   * them again from it (derived data only: raw nodes, index entries and the audit log are untouched).
   * `cairn check --repair` runs it on every tenant.
   */
  async repairLexicalIndex(tenant: string): Promise<LexicalRepair> {
    const before = await this.#store.verifyLexical(tenant);
    if (before.length === 0) return { before, rebuilt: false, after: before };
    await this.#store.rebuildLexical(tenant);
    return { before, rebuilt: true, after: await this.#store.verifyLexical(tenant) };
  }

  async listAudit(scope: Scope, options?: { limit?: number; offset?: number }): Promise<AuditEvent[]> {
    const limit = options?.limit ?? defaultAuditPage;
    if (!Number.isInteger(limit) || limit < 0) throw new InputError("limit", "must be a non-negative integer");
    return this.#scoped(scope).readAudit({ limit, offset: options?.offset });
  }

  async stats(scope: Scope): Promise<ScopeStats> {
    return this.#scoped(scope).stats();
  }

  // ── Video streams (ReflectWorld-MM) ─────────────────────────────────────────────────────────

  /**
   * Watches a video source — a file path, an `rtsp://` or `http(s)://` URL, or `-` for stdin — and
   * writes what it sees into this scope: key frames and crops as raw nodes, identities through one
   * resolver, observations, traces and chapters. A bad source is a typed error before anything is
   * written; `stop()` ends a live stream and commits what was seen.
   *
   * @example
   * const watch = await memory.watch(scope, "cam.mp4");
   * const result = await watch.done; // or: await watch.stop()
   */
  async watch(scope: Scope, source: string | VideoSource, options: WatchOptions = {}): Promise<VideoWatch> {
    const scoped = this.#scoped(scope);
    const watch = await startWatch(
      {
        scoped,
        models: this.models,
        detector: this.#videoDetector(),
        config: this.video,
        addSession: (input, addOptions) => this.addSession(scope, input, addOptions),
        newId: newVideoId,
        now: Date.now,
        deliver: (notification) =>
          this.#notifications.deliver(
            { ...notification, scope: { tenant: scope.tenant, user: scope.user } },
            this.video.notify,
          ),
      },
      typeof source === "string" ? parseVideoSource(source) : source,
      options,
    );
    const key = scopeKey(scope);
    const running = this.#watching.get(key) ?? new Map<string, number>();
    running.set(watch.stream, Date.now());
    this.#watching.set(key, running);
    const ended = () => {
      running.delete(watch.stream);
      if (running.size === 0 && this.#watching.get(key) === running) this.#watching.delete(key);
    };
    watch.done.then(ended, ended);
    return watch;
  }

  /** The source view: the scope's watched sources with their streams, segments and live status. */
  async listVideoSources(scope: Scope): Promise<VideoSourceSummary[]> {
    return listSources(this.#scoped(scope), this.#watching.get(scopeKey(validateScope(scope))) ?? new Map());
  }

  /** Entities seen in this scope's streams (or enrolled), with their sightings per stream. */
  async listEntities(scope: Scope, options: { includeMerged?: boolean } = {}): Promise<EntitySummary[]> {
    return listEntities(this.#scoped(scope), options);
  }

  /** Names an entity (an audited user decision). */
  async nameEntity(scope: Scope, entityId: string, name: string): Promise<VideoItem> {
    return nameEntity(this.#scoped(scope), entityId, name);
  }

  /** Enrols face slots from portrait photos, for an existing entity or a new named one (audited). */
  async enrolEntity(
    scope: Scope,
    target: { entityId?: string; name?: string },
    photos: readonly EnrolPhoto[],
  ): Promise<{ entityId: string; slots: number }> {
    return enrolEntity(
      {
        scoped: this.#scoped(scope),
        detector: this.#videoDetector(),
        identity: this.video.identity,
        addSession: (input) => this.addSession(scope, input, { readImages: false }),
        newId: newVideoId,
        now: Date.now,
      },
      target,
      photos,
    );
  }

  /** Merges one entity into another (audited): its slots and observations move. */
  async mergeEntities(scope: Scope, from: string, into: string): Promise<void> {
    return mergeEntities(this.#scoped(scope), from, into);
  }

  /** Splits observations off an entity into a new one (audited); returns the new entity's id. */
  async splitEntity(scope: Scope, entityId: string, observationIds: readonly string[]): Promise<string> {
    return splitEntity(this.#scoped(scope), entityId, observationIds, () => newVideoId("vent"));
  }

  /** Searches one episodic level (observation, trace or chapter) of this scope's video memory. */
  async searchVideo(
    scope: Scope,
    query: string,
    options: { level?: EpisodicLevel; limit?: number; stream?: string; entityId?: string } = {},
  ): Promise<VideoHit[]> {
    return searchLevel(this.#scoped(scope), this.models, query, { level: options.level ?? "trace", ...options });
  }

  /** A video item (entity, observation, trace, chapter) with its time-ordered neighbours at the same level. */
  async getVideoItem(
    scope: Scope,
    id: string,
    options: { neighbours?: number } = {},
  ): Promise<{ item: VideoItem; before: VideoItem[]; after: VideoItem[] }> {
    return getWithNeighbours(this.#scoped(scope), id, options.neighbours ?? 2);
  }

  /** The key frames and crops behind a video item; their original pixels come from `getBlob`. */
  async videoKeyFrames(scope: Scope, id: string): Promise<KeyFrame[]> {
    return keyFramesOf(this.#scoped(scope), id);
  }

  /**
   * Answers a question from the video memory through the profile's chat model, citing the items
   * (facts, chapters, traces, observations) it used; a ConfigError without a chat model.
   */
  async answerFromVideo(
    scope: Scope,
    question: string,
    options: { levels?: readonly EpisodicLevel[]; limit?: number } = {},
  ): Promise<VideoAnswer> {
    return answerFromVideo(this.#scoped(scope), this.models, question, options);
  }

  /** The per-segment moments (traces), newest first, with the key frames behind each. */
  async listVideoMoments(
    scope: Scope,
    options: { stream?: string; limit?: number } = {},
  ): Promise<{ item: VideoItem; frames: KeyFrame[] }[]> {
    return listMoments(this.#scoped(scope), options);
  }

  /**
   * Semantic memory: the facts about this scope's entities and sources' scenes (or one entity's, or
   * one source's), most important first.
   */
  async listFacts(scope: Scope, options: { entityId?: string; source?: string } = {}): Promise<ScopeFact[]> {
    return listFacts(this.#scoped(scope), options);
  }

  /** One entity's panel: its evolving facts with their edit history, sightings and recent observations. */
  async entityMemory(scope: Scope, entityId: string): Promise<EntityMemory> {
    return entityMemory(this.#scoped(scope), entityId, { every: this.video.semantic.every });
  }

  /**
   * Procedural memory: a rule or preference for this scope's streams (audited). Rules produce signals
   * per segment; the deterministic notifier decides what to deliver.
   *
   * @example
   * await memory.addVideoRule(scope, { text: "alert when fewer than 2 bottles remain" });
   */
  async addVideoRule(scope: Scope, input: RuleInput): Promise<VideoItem> {
    return addRule(this.#scoped(scope), this.models, input, newVideoId, this.#now);
  }

  async listVideoRules(scope: Scope): Promise<VideoItem[]> {
    return listRules(this.#scoped(scope));
  }

  async removeVideoRule(scope: Scope, id: string): Promise<void> {
    return removeRule(this.#scoped(scope), id);
  }

  /** The notification log: every decision of the notifier (sent, suppressed, cleared), newest first. */
  async listVideoNotifications(
    scope: Scope,
    options: { stream?: string; ruleId?: string; outcome?: string; limit?: number } = {},
  ): Promise<VideoItem[]> {
    return listNotifications(this.#scoped(scope), options);
  }

  /** Live deliveries of this scope (the SSE stream reads these). Returns the unsubscribe. */
  subscribeVideoNotifications(scope: Scope, listener: (notification: VideoNotification) => void): () => void {
    return this.#notifications.subscribe((notification) => {
      if (notification.scope.tenant === scope.tenant && notification.scope.user === scope.user) listener(notification);
    });
  }

  #videoDetector(): Detector {
    this.#detector ??= createLocalDetector();
    return this.#detector;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // A detector the memory started is the memory's to close; one passed in belongs to the caller.
    if (this.#detector && this.#detector !== this.#options.video?.detector) await this.#detector.close();
    await this.#store.close();
    if (this.#options.ownsModels) await this.models.close();
  }

  /** In the scope's write queue: two compilations of one scope never bank the same session twice at once. */
  async #reverify(scoped: ScopedStore): Promise<ReverifyReport> {
    return this.#writeLocks.run(`${scopeKey(scoped.scope)}#bank`, () => reverifyBank(scoped, this.#compiler));
  }

  async #compile(scoped: ScopedStore, sessionKey: string): Promise<BankedReport> {
    return this.#writeLocks.run(`${scopeKey(scoped.scope)}#bank`, () =>
      compileIntoBank(scoped, sessionKey, this.#compiler),
    );
  }

  #scoped(scope: Scope): ScopedStore {
    return this.#store.forScope(validateScope(scope));
  }

  #intake(options: AddSessionOptions): IntakeOptions {
    return {
      baseDir: options.baseDir,
      allowRemoteImages: this.#options.allowRemoteImages,
      fetch: this.#options.fetch,
      limits: this.limits,
    };
  }

  /** A store migrated from before the maintained index replays its sessions through maintenance once. */
  async #ensureIndex(scoped: ScopedStore): Promise<number> {
    const status = await scoped.indexStatus();
    if (!status.needsRebuild) return status.version;
    await this.rebuildIndex(scoped.scope);
    return (await scoped.indexStatus()).version;
  }
}

function resolveRoles(roles: "rules" | "chat" | CompileRoles, models: Models): CompileRoles {
  if (roles === "rules") return ruleRoles;
  if (roles === "chat") {
    if (!models.chat)
      throw new ConfigError(`compile roles "chat" need a chat model; the ${models.profile} profile has none`);
    return new ChatRoles(models.chat);
  }
  return roles;
}

function newVideoId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString("base64url")}`;
}

function newEntryId(): string {
  return `ent_${randomBytes(12).toString("base64url")}`;
}
