import { createHash, randomBytes } from "node:crypto";
import type { ChannelName, Fused } from "./channels/rrf.ts";
import { allChannels, retrieveTriPath, type TopChannel } from "./channels/tri-path.ts";
import { ConfigError, InputError } from "./core/errors.ts";
import { type Scope, scopeKey, validateScope } from "./core/scope.ts";
import { assemblePack } from "./evidence/assemble-pack.ts";
import { type Budget, defaultBudget } from "./evidence/budget.ts";
import type { EvidencePack } from "./evidence/evidence-pack.ts";
import type { RouteConfig } from "./evidence/route-trace.ts";
import { type AcceptedImage, intakeImage } from "./ingest/image-intake.ts";
import { defaultIngestLimits, type IngestLimits } from "./ingest/limits.ts";
import { type ImageInput, parseSessionInput, type SessionInput } from "./ingest/session-input.ts";
import { checkIndex, type IndexViolation } from "./maintain/check.ts";
import {
  defaultMaintenanceConfig,
  type IndexBounds,
  type IndexUtilisation,
  type MaintenanceConfig,
} from "./maintain/config.ts";
import { buildIncomingEntries } from "./maintain/incoming.ts";
import { ChatJudge, ComparatorJudge, type RelationJudge } from "./maintain/judge.ts";
import { type MaintenancePolicy, planMaintenance, Ramu } from "./maintain/ramu.ts";
import { emptyPlan, replayIndex } from "./maintain/replay-index.ts";
import type { IncomingEntry } from "./maintain/working-index.ts";
import { measure } from "./maintain/working-index.ts";
import { EmbeddingCache } from "./models/embedding-cache.ts";
import type { Models } from "./models/provider.ts";
import { latestFirst, retrieveRouted } from "./route/routed-search.ts";
import type { LinkedEntries, Route } from "./route/router.ts";
import { defaultSearchConfig, type SearchConfig, type SearchMode } from "./route/search-config.ts";
import { type IndexEntry, type IndexState, IndexVersionConflict, type MaintenancePlan } from "./store/index-records.ts";
import type {
  AuditEvent,
  BlobRecord,
  Entry,
  ForgetResult,
  ForgetTarget,
  RawNode,
  RawNodeWrite,
  ScopeStats,
  SearchFilters,
  SessionRecord,
  SessionWrite,
  VectorSpace,
} from "./store/records.ts";
import { SqliteStore } from "./store/sqlite/sqlite-store.ts";
import type { ScopedStore, Store } from "./store/store.ts";

export interface MemoryOptions {
  /** Folder of the embedded store (created on first use). Ignored when `store` is given. */
  readonly path?: string;
  /** Another `Store` backend; Memory closes it on `close()`. */
  readonly store?: Store;
  readonly models: Models;
  /** Close `models` with the memory. Off by default: whoever made the models closes them (they may be shared). */
  readonly ownsModels?: boolean;
  readonly budget?: Partial<Budget>;
  readonly search?: Partial<Omit<SearchConfig, "routing">> & { readonly routing?: Partial<RouteConfig> };
  readonly limits?: Partial<IngestLimits>;
  /** Bounds of the active index and RAMU's settings (DESIGN §4 defaults). */
  readonly maintenance?: Partial<Omit<MaintenanceConfig, "bounds">> & { readonly bounds?: Partial<IndexBounds> };
  /** The relation judge: the model-free comparator by default; `"chat"` uses `models.chat` (an LLM judge). */
  readonly judge?: "comparator" | "chat" | RelationJudge;
  /** Let `addSession` fetch `url` images. Off by default. */
  readonly allowRemoteImages?: boolean;
  readonly fetch?: typeof fetch;
}

export interface AddSessionOptions {
  /** Folder that image `path`s are relative to (the JSONL file's folder for the CLI). */
  readonly baseDir?: string;
}

export interface AddSessionResult {
  readonly sessionId: string;
  readonly sessionKey: string;
  readonly rawNodeIds: readonly string[];
  /** Index entries this session created or changed. */
  readonly entryIds: readonly string[];
  /** What maintenance did: one index action per segment, and capacity fallbacks taken. */
  readonly maintenance: { readonly actions: readonly string[]; readonly overflowRepairs: number };
  /** The identical session was already stored; nothing was written. */
  readonly duplicate: boolean;
  readonly warnings: readonly string[];
}

export interface IndexCheck {
  readonly violations: readonly IndexViolation[];
  readonly rawNodes: number;
  /** Entries of every status. */
  readonly entries: number;
  readonly utilisation: IndexUtilisation;
}

export interface SearchQuery {
  readonly text?: string;
  /** Query image, as bytes or base64 (`{ data }`); finds similar images through the image vector channel. */
  readonly image?: Extract<ImageInput, { data: unknown }>;
}

export interface SearchOptions {
  readonly budget?: Partial<Budget>;
  /** How to read: through the active index and the direct channels (`cairn`, default), the index only, or the direct channels only. */
  readonly mode?: SearchMode;
  /** Routing settings for this search (γ, λ, entries per query, linked entries per entry). */
  readonly routing?: Partial<RouteConfig>;
  /**
   * Read through this index instead of the stored one: the harness uses it to compare maintenance
   * policies over the same raw nodes. Entries must point at raw nodes of the scope.
   */
  readonly index?: IndexState;
  /** Channels to use (default all three): e.g. `["bm25"]` for lexical search only. */
  readonly channels?: readonly TopChannel[];
  /**
   * Whether the reader of the pack sees pixels (default true). With `false`, images arrive as their
   * captions and OCR text, charged to the text-token budget instead of the image budget.
   */
  readonly vision?: boolean;
  readonly filters?: {
    /** Session keys (the caller's own ids). */
    readonly sessions?: readonly string[];
    readonly from?: string;
    readonly to?: string;
    readonly speakers?: readonly string[];
  };
}

/**
 * The SDK. Raw observations go into an immutable cold store; search answers with an evidence
 * pack of original text and images under a joint budget.
 *
 * @example
 * const memory = await Memory.open({ path: ".cairn", models: createHashModels() });
 * await memory.addSession({ tenant: "acme", user: "ana" }, { session: "s1", time: "2024-05-08T13:56:00Z",
 *   turns: [{ speaker: "Ana", text: "I adopted a corgi named Biscuit" }] });
 * const pack = await memory.search({ tenant: "acme", user: "ana" }, "what dog did Ana get?");
 * await memory.close();
 */
export class Memory {
  readonly store: Store;
  readonly models: Models;
  readonly budget: Budget;
  readonly searchConfig: SearchConfig;
  readonly limits: IngestLimits;
  readonly maintenance: MaintenanceConfig;
  readonly #policy: MaintenancePolicy;
  readonly #options: MemoryOptions;
  readonly #queryEmbeddings = new EmbeddingCache(256);
  readonly #writeLocks = new KeyedQueue();
  readonly #activeIndexes = new Map<string, { version: number; entries: readonly IndexEntry[] }>();
  #closed = false;

  private constructor(store: Store, options: MemoryOptions) {
    this.store = store;
    this.models = options.models;
    this.budget = Object.freeze({ ...defaultBudget, ...options.budget });
    this.searchConfig = Object.freeze({
      ...defaultSearchConfig,
      ...options.search,
      routing: Object.freeze({ ...defaultSearchConfig.routing, ...options.search?.routing }),
    });
    this.limits = Object.freeze({ ...defaultIngestLimits, ...options.limits });
    this.maintenance = Object.freeze({
      ...defaultMaintenanceConfig,
      ...options.maintenance,
      bounds: Object.freeze({ ...defaultMaintenanceConfig.bounds, ...options.maintenance?.bounds }),
    });
    this.#policy = new Ramu(this.maintenance, resolveJudge(options.judge, options.models));
    this.#options = options;
  }

  static async open(options: MemoryOptions): Promise<Memory> {
    const store = options.store ?? (await SqliteStore.open({ path: options.path ?? ".cairn" }));
    return new Memory(store, options);
  }

  get textSpace(): VectorSpace {
    return { name: `text:${this.models.text.id}`, kind: "text", dimensions: this.models.text.dimensions };
  }

  /** Dense vectors of image-derived text (captions, OCR), so text finds images by meaning too. */
  get imageTextSpace(): VectorSpace {
    return { name: `imagetext:${this.models.text.id}`, kind: "text", dimensions: this.models.text.dimensions };
  }

  get imageSpace(): VectorSpace | null {
    const image = this.models.image;
    return image ? { name: `image:${image.id}`, kind: "image", dimensions: image.dimensions } : null;
  }

  /**
   * Checks a session exactly as `addSession` would (schema, limits, every image loaded and
   * decoded) without writing anything, so a caller can reject a whole batch before the first write.
   */
  async validateSession(
    input: unknown,
    options: AddSessionOptions = {},
  ): Promise<{ sessionKey: string; turns: number; images: number }> {
    const session = parseSessionInput(input, this.limits);
    const images = await this.#intakeImages(session, options);
    return { sessionKey: session.session, turns: session.turns.length, images: images.perTurn.flat().length };
  }

  /** Validates, embeds and commits one session atomically; a rejected session changes nothing. */
  async addSession(scope: Scope, input: unknown, options: AddSessionOptions = {}): Promise<AddSessionResult> {
    const scoped = this.store.forScope(validateScope(scope));
    const session = parseSessionInput(input, this.limits);
    const warnings: string[] = [];
    const images = await this.#intakeImages(session, options);
    // Pixels already stored were read and embedded when they first arrived: reuse that work.
    const known = await scoped.knownImages([...images.unique.keys()], this.imageSpace?.name ?? null);
    const derivedText = await this.#readImages(
      [...images.unique.values()].filter((image) => !known.get(image.hash)?.derivedText),
      warnings,
    );
    for (const [hash, { derivedText: text }] of known) if (text) derivedText.set(hash, text);
    const sessionTimeMs = Date.parse(session.time);

    const imageTexts = session.turns.map((_, index) =>
      (images.perTurn[index] ?? [])
        .flatMap((image) => [image.caption, image.accepted && derivedText.get(image.accepted.hash)])
        .filter(Boolean)
        .join("\n"),
    );
    // A turn that is only an image is represented in the dense text channel by what the image says.
    const turnTexts = session.turns.map((turn, index) => (turn.text ?? "").trim() || (imageTexts[index] ?? ""));
    // One pass through the embedder for both spaces: fewer round trips to the model worker.
    const vectors = await embedInBatches(this.models.text.maxBatchSize, [...turnTexts, ...imageTexts], (batch) =>
      this.models.text.embed(batch),
    );
    const textVectors = vectors.slice(0, turnTexts.length);
    const imageTextVectors = vectors.slice(turnTexts.length);
    const imageVectors = await this.#embedImages(
      [...images.unique.values()].filter((image) => !known.get(image.hash)?.vector),
      warnings,
    );
    for (const [hash, { vector }] of known) if (vector) imageVectors.set(hash, vector);

    const textSpace = this.textSpace;
    const imageTextSpace = this.imageTextSpace;
    const imageSpace = this.imageSpace;
    const rawNodes: RawNodeWrite[] = session.turns.map((turn, index) => ({
      turn: index,
      speaker: turn.speaker ?? null,
      role: turn.role ?? null,
      text: turn.text ?? "",
      timeMs: turn.time ? Date.parse(turn.time) : sessionTimeMs,
      source: session.source ?? null,
      uri: turn.uri ?? null,
      metadata: turn.metadata ?? {},
      images: (images.perTurn[index] ?? []).map(({ accepted, caption, origin }) => ({
        hash: accepted?.hash ?? null,
        caption,
        derivedText: (accepted && derivedText.get(accepted.hash)) ?? null,
        origin,
      })),
      textVectors: {
        ...(turnTexts[index] ? { [textSpace.name]: textVectors[index] as Float32Array } : {}),
        ...(imageTexts[index] ? { [imageTextSpace.name]: imageTextVectors[index] as Float32Array } : {}),
      },
      imageVectors: (images.perTurn[index] ?? []).map(({ accepted }) => {
        const vector = accepted && imageVectors.get(accepted.hash);
        return imageSpace && vector ? { [imageSpace.name]: vector } : {};
      }),
    }));

    const spaces = { text: textSpace.name, image: imageSpace?.name ?? null };
    const incoming = buildIncomingEntries(
      session.session,
      rawNodes.map((node, index) => ({
        ref: `@${index}`,
        speaker: node.speaker,
        text: node.text,
        imageText: node.images.flatMap((image) =>
          [image.caption, image.derivedText].filter((text): text is string => !!text),
        ),
        timeMs: node.timeMs,
        vector: node.textVectors[textSpace.name] ?? null,
        imageVectors: imageSpace
          ? node.imageVectors.flatMap((vectors) =>
              vectors[imageSpace.name] ? [vectors[imageSpace.name] as Float32Array] : [],
            )
          : [],
      })),
      { segmentMaxNodes: this.maintenance.segmentMaxNodes, dimensions: textSpace.dimensions },
    );
    const write = {
      key: session.session,
      timeMs: sessionTimeMs,
      source: session.source ?? null,
      contentHash: contentHash(session, images.perTurn),
      blobs: [...images.unique.values()].map(({ origin: _origin, ...blob }) => blob),
      rawNodes,
      spaces: imageSpace ? [textSpace, imageTextSpace, imageSpace] : [textSpace, imageTextSpace],
    };
    await this.#ensureIndex(scoped);
    // Writers of one scope in this process take turns to plan and commit (planning takes
    // milliseconds); across processes, optimistic concurrency: a plan commits only against the
    // index version it was made from, else it is made again.
    return this.#writeLocks.run(scopeKey(scoped.scope), () =>
      this.#planAndCommit(scoped, session.session, incoming, write, spaces, warnings),
    );
  }

  async #planAndCommit(
    scoped: ScopedStore,
    key: string,
    incoming: readonly IncomingEntry[],
    write: Omit<SessionWrite, "index">,
    spaces: { text: string; image: string | null },
    warnings: string[],
  ): Promise<AddSessionResult> {
    let plan: MaintenancePlan | null = null;
    for (let attempt = 1; ; attempt++) {
      plan = (await scoped.findSessionByKey(key))
        ? emptyPlan()
        : await planMaintenance(await scoped.readIndex({ activeOnly: true }), incoming, this.#policy, {
            bounds: this.maintenance.bounds,
            newId: newEntryId,
            nowMs: Date.now(),
          });
      try {
        const result = await scoped.commitSession({ ...write, index: { plan, spaces } });
        warnings.push(...(result.duplicate ? [] : plan.warnings));
        return {
          sessionId: result.session.id,
          sessionKey: result.session.key,
          rawNodeIds: result.rawNodeIds,
          entryIds: result.entryIds,
          maintenance: result.duplicate
            ? { actions: [], overflowRepairs: 0 }
            : { actions: plan.audits.map((audit) => audit.action), overflowRepairs: plan.overflowRepairs },
          duplicate: result.duplicate,
          warnings,
        };
      } catch (error) {
        if (!(error instanceof IndexVersionConflict) || attempt >= maxPlanAttempts) throw error;
      }
    }
  }

  /** A store migrated from before the maintained index replays its sessions through maintenance once. */
  async #ensureIndex(scoped: ScopedStore): Promise<void> {
    if (await scoped.indexNeedsRebuild()) await this.rebuildIndex(scoped.scope);
  }

  /**
   * Rebuilds a scope's active index by replaying its sessions in time order through maintenance
   * (query-blind, as if they had just arrived). Used after a migration or a change of bounds.
   */
  async rebuildIndex(scope: Scope): Promise<IndexState> {
    const scoped = this.store.forScope(validateScope(scope));
    const spaces = { text: this.textSpace.name, image: this.imageSpace?.name ?? null };
    const replayed = await replayIndex(scoped, this.#policy, {
      config: this.maintenance,
      spaces,
      dimensions: this.textSpace.dimensions,
      newId: newEntryId,
    });
    await scoped.rebuildIndex(replayed.plan, spaces);
    return replayed.state;
  }

  async #intakeImages(session: SessionInput, options: AddSessionOptions) {
    const unique = new Map<string, AcceptedImage>();
    const perTurn: TurnImage[][] = [];
    for (const [turnIndex, turn] of session.turns.entries()) {
      const list: TurnImage[] = [];
      for (const [imageIndex, image] of (turn.images ?? []).entries()) {
        if ("unavailable" in image) {
          list.push({ accepted: null, caption: image.caption.trim(), origin: image.unavailable });
          continue;
        }
        const accepted = await intakeImage(image, `turns[${turnIndex}].images[${imageIndex}]`, {
          baseDir: options.baseDir,
          allowRemoteImages: this.#options.allowRemoteImages,
          fetch: this.#options.fetch,
          limits: this.limits,
        });
        if (!unique.has(accepted.hash)) unique.set(accepted.hash, accepted);
        list.push({ accepted, caption: image.caption?.trim() || null, origin: accepted.origin });
      }
      perTurn.push(list);
    }
    return { unique, perTurn };
  }

  /** Image-derived text (OCR, captions from a vision model). A failing reader degrades to a warning. */
  async #readImages(images: AcceptedImage[], warnings: string[]): Promise<Map<string, string>> {
    const texts = new Map<string, string>();
    for (const image of images) {
      const parts: string[] = [];
      for (const reader of this.models.imageReaders) {
        try {
          const text = (await reader.readImage(image.data)).trim();
          if (text) parts.push(text);
        } catch (error) {
          warnings.push(
            `${reader.produces} by ${reader.id} failed for image ${image.hash.slice(0, 12)}: ${(error as Error).message}`,
          );
        }
      }
      if (parts.length > 0) texts.set(image.hash, parts.join("\n"));
    }
    return texts;
  }

  async #embedImages(images: AcceptedImage[], warnings: string[]): Promise<Map<string, Float32Array>> {
    const embedder = this.models.image;
    if (!embedder) {
      if (images.length > 0)
        warnings.push(`the ${this.models.profile} profile has no image embedder: images are searchable by text only`);
      return new Map();
    }
    const vectors = await embedInBatches(embedder.maxBatchSize, images, (batch) =>
      embedder.embedImages(batch.map((image) => image.data)),
    );
    return new Map(images.map((image, index) => [image.hash, vectors[index] as Float32Array]));
  }

  /**
   * Tri-path search (BM25, dense text, image channel) fused by RRF, packed under the joint budget.
   * @example const pack = await memory.search(scope, "the red bicycle", { budget: { images: 2 } });
   */
  async search(scope: Scope, query: string | SearchQuery, options: SearchOptions = {}): Promise<EvidencePack> {
    const started = performance.now();
    const scoped = this.store.forScope(validateScope(scope));
    const { text, image } = typeof query === "string" ? { text: query, image: undefined } : query;
    const queryText = text?.trim() ?? "";
    if (!queryText && !image) throw new InputError("query", "give query text, a query image, or both");
    if (queryText.length > this.limits.maxTextChars)
      throw new InputError("query.text", `must be at most ${this.limits.maxTextChars} characters`);
    const budget = validateBudget({ ...this.budget, ...options.budget });
    const filters = toFilters(options.filters);
    const warnings: string[] = [];

    const embedStarted = performance.now();
    const channels = options.channels ?? allChannels;
    // Embed only for what uses vectors: BM25 alone needs no model call; routing compares vectors.
    const needsTextVector =
      channels.includes("dense") ||
      channels.includes("image") ||
      (options.mode ?? this.searchConfig.mode) !== "tri-path";
    const queryVector =
      queryText && needsTextVector
        ? await this.#queryEmbeddings.get(queryText, async (text) => (await this.models.text.embed([text]))[0])
        : undefined;
    let queryImage: { hash: string; vector: Float32Array | null } | null = null;
    if (image) {
      const accepted = await intakeImage(image, "query.image", { limits: this.limits });
      const embedder = channels.includes("image") ? this.models.image : undefined;
      if (!channels.includes("image")) warnings.push("the query image was not used: the image channel is off");
      else if (!embedder) {
        warnings.push(`the ${this.models.profile} profile has no image embedder: the query image was not used`);
      }
      const vector = embedder
        ? ((await this.#queryEmbeddings.get(
            `image:${embedder.id}:${accepted.hash}`,
            async () => (await embedder.embedImages([accepted.data]))[0],
          )) ?? null)
        : null;
      queryImage = { hash: accepted.hash, vector };
    }
    const embedMs = performance.now() - embedStarted;

    const searchStarted = performance.now();
    const mode = options.mode ?? this.searchConfig.mode;
    const spaces = {
      text: this.textSpace.name,
      imageText: this.imageTextSpace.name,
      image: this.imageSpace?.name ?? null,
    };
    const triPathQuery = { text: queryText, textVector: queryVector, imageVector: queryImage?.vector ?? undefined };
    let ordered: readonly Fused[];
    let nodes: ReadonlyMap<string, RawNode>;
    let channelsUsed: readonly ChannelName[];
    let route: Route | null = null;
    if (mode === "tri-path") {
      const direct = await retrieveTriPath(scoped, triPathQuery, {
        spaces,
        channels,
        filters,
        rrfK: this.searchConfig.rrfK,
        perChannel: this.searchConfig.perChannel,
      });
      ordered = direct.fused;
      channelsUsed = direct.channelsUsed;
      nodes = new Map((await scoped.getRawNodes(ordered.map((hit) => hit.id))).map((node) => [node.id, node]));
    } else {
      await this.#ensureIndex(scoped);
      const routed = await retrieveRouted(scoped, triPathQuery, {
        mode,
        active: options.index
          ? [...options.index.entries.values()].filter((entry) => entry.status === "active")
          : await this.#activeEntries(scoped),
        linked: options.index ? linkedFrom(options.index) : undefined,
        spaces,
        channels,
        filters,
        rrfK: this.searchConfig.rrfK,
        perChannel: this.searchConfig.perChannel,
        routing: { ...this.searchConfig.routing, ...options.routing },
        pageBeam: budget.pages,
        budgetRawNodes: budget.rawNodes,
      });
      ({ ordered, nodes, channelsUsed, route } = routed);
    }
    const packed = assemblePack(ordered, nodes, budget, { vision: options.vision ?? true });
    const used = route
      ? {
          ...packed.budget,
          used: { ...packed.budget.used, pages: route.pagesRead },
          cut: { ...packed.budget.cut, pages: route.pagesCut },
        }
      : packed.budget;
    const items = route
      ? latestFirst(packed.items, (item) => item.rawNodeId, route).map((item) => {
          const via = route?.nodes.get(item.rawNodeId);
          return via ? { ...item, route: { entry: via.entry, via: via.via, latest: via.latest } } : item;
        })
      : packed.items;
    const searchMs = performance.now() - searchStarted;
    const cuts = Object.entries(used.cut).filter(([, count]) => count > 0);
    if (cuts.length > 0) {
      warnings.push(
        `budget cut ${cuts.map(([dimension, count]) => `${count} by ${dimension}`).join(", ")} (see budget.cutItems)`,
      );
    }
    return {
      query: { text: queryText || null, image: queryImage ? { hash: queryImage.hash } : null },
      mode,
      items,
      budget: used,
      channelsUsed,
      ...(route ? { route: { ...route.trace, selected: items.length } } : {}),
      warnings,
      timings: { embedMs, searchMs, totalMs: performance.now() - started },
    };
  }

  /** The scope's active entries, cached until the index changes. */
  async #activeEntries(scoped: ScopedStore): Promise<readonly IndexEntry[]> {
    const key = scopeKey(scoped.scope);
    const version = await scoped.indexVersion();
    const cached = this.#activeIndexes.get(key);
    if (cached && cached.version === version) return cached.entries;
    const state = await scoped.readIndex({ activeOnly: true });
    const entries = [...state.entries.values()];
    this.#activeIndexes.set(key, { version: state.version, entries });
    if (this.#activeIndexes.size > 64) this.#activeIndexes.delete(this.#activeIndexes.keys().next().value as string);
    return entries;
  }

  /** A session by its id or by its key (the caller's own id). */
  async getSession(scope: Scope, idOrKey: string): Promise<SessionRecord> {
    const scoped = this.store.forScope(validateScope(scope));
    const byKey = await scoped.findSessionByKey(idOrKey);
    return byKey ?? scoped.getSession(idOrKey);
  }

  async getRawNode(scope: Scope, id: string): Promise<RawNode> {
    return this.store.forScope(validateScope(scope)).getRawNode(id);
  }

  /** Original bytes of an image (or its 256 px WebP thumbnail) referenced by a raw node of this scope. */
  async getBlob(
    scope: Scope,
    hash: string,
    options: { thumbnail?: boolean } = {},
  ): Promise<{ record: BlobRecord; data: Uint8Array; mediaType: string }> {
    const scoped = this.store.forScope(validateScope(scope));
    if (options.thumbnail) {
      const data = await scoped.getThumbnail(hash);
      const { record } = await scoped.getBlob(hash);
      return { record, data, mediaType: "image/webp" };
    }
    const blob = await scoped.getBlob(hash);
    return { ...blob, mediaType: blob.record.mediaType };
  }

  /** Deletes raw evidence and everything derived from it (vectors, index rows, entries, orphaned blobs); audited. */
  async forget(scope: Scope, target: ForgetTarget): Promise<ForgetResult> {
    return this.store.forScope(validateScope(scope)).forget(target);
  }

  async listSessions(scope: Scope, options?: { limit?: number; offset?: number }): Promise<SessionRecord[]> {
    return this.store.forScope(validateScope(scope)).listSessions(options);
  }

  async listRawNodes(scope: Scope, sessionId: string): Promise<RawNode[]> {
    return this.store.forScope(validateScope(scope)).listRawNodes({ sessionId });
  }

  async listEntries(scope: Scope, options?: { limit?: number; offset?: number }): Promise<Entry[]> {
    return this.store.forScope(validateScope(scope)).listEntries(options);
  }

  /**
   * Verifies DESIGN invariants 2 and 6 on this scope's stored index: every raw node reachable from
   * an active entry or a recorded fallback, links sound, every maintenance action audited, bounds held.
   */
  async checkIndex(scope: Scope): Promise<IndexCheck> {
    const scoped = this.store.forScope(validateScope(scope));
    // A store migrated from before the maintained index builds it first, as a search or a write would.
    await this.#ensureIndex(scoped);
    const state = await scoped.readIndex({ activeOnly: false });
    const rawNodeIds: string[] = [];
    for (const session of await scoped.listSessions({ limit: -1 })) {
      for (const node of await scoped.listRawNodes({ sessionId: session.id })) rawNodeIds.push(node.id);
    }
    const audits = await scoped.listAudit({ limit: -1 });
    const violations = checkIndex({ entries: state.entries, rawNodeIds, audits, bounds: this.maintenance.bounds });
    return {
      violations,
      rawNodes: rawNodeIds.length,
      entries: state.entries.size,
      utilisation: measure(state.entries, this.maintenance.bounds),
    };
  }

  async listAudit(scope: Scope, options?: { limit?: number; offset?: number }): Promise<AuditEvent[]> {
    return this.store.forScope(validateScope(scope)).listAudit(options);
  }

  async stats(scope: Scope): Promise<ScopeStats> {
    return this.store.forScope(validateScope(scope)).stats();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.store.close();
    if (this.#options.ownsModels) await this.models.close();
  }
}

async function embedInBatches<T>(
  batchSize: number,
  items: readonly T[],
  embed: (batch: T[]) => Promise<Float32Array[]>,
): Promise<Float32Array[]> {
  const vectors: Float32Array[] = [];
  const present = items.map((item, index) => ({ item, index })).filter(({ item }) => item !== "");
  for (let start = 0; start < present.length; start += batchSize) {
    const batch = present.slice(start, start + batchSize);
    const result = await embed(batch.map(({ item }) => item));
    batch.forEach(({ index }, position) => {
      vectors[index] = result[position] as Float32Array;
    });
  }
  return vectors;
}

/** One image of a turn after intake; `accepted` is null for a caption-only image. */
interface TurnImage {
  readonly accepted: AcceptedImage | null;
  readonly caption: string | null;
  readonly origin: string | null;
}

function contentHash(session: SessionInput, images: TurnImage[][]): string {
  const canonical = {
    time: Date.parse(session.time),
    source: session.source ?? null,
    turns: session.turns.map((turn, index) => ({
      speaker: turn.speaker ?? null,
      role: turn.role ?? null,
      text: turn.text ?? "",
      time: turn.time ? Date.parse(turn.time) : null,
      uri: turn.uri ?? null,
      metadata: turn.metadata ?? {},
      images: (images[index] ?? []).map(({ accepted, caption, origin }) => [accepted?.hash ?? null, caption, origin]),
    })),
  };
  return createHash("sha256").update(JSON.stringify(canonical)).digest("hex");
}

const maxPlanAttempts = 8;

/** Runs tasks one at a time per key, in arrival order. */
class KeyedQueue {
  readonly #tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const current = previous.catch(() => undefined).then(task);
    this.#tails.set(key, current);
    try {
      return await current;
    } finally {
      if (this.#tails.get(key) === current) this.#tails.delete(key);
    }
  }
}

function linkedFrom(index: IndexState): LinkedEntries {
  return async ({ hosts, ids }) => {
    const hostSet = new Set(hosts);
    const idSet = new Set(ids);
    return [...index.entries.values()].filter(
      (entry) => (entry.host && hostSet.has(entry.host)) || idSet.has(entry.id),
    );
  };
}

function newEntryId(): string {
  return `ent_${randomBytes(12).toString("base64url")}`;
}

function resolveJudge(judge: MemoryOptions["judge"], models: Models): RelationJudge {
  if (judge === undefined || judge === "comparator") return new ComparatorJudge();
  if (judge === "chat") {
    if (!models.chat) throw new ConfigError(`judge "chat" needs a chat model; the ${models.profile} profile has none`);
    return new ChatJudge(models.chat);
  }
  return judge;
}

function validateBudget(budget: Budget): Budget {
  for (const [dimension, value] of Object.entries(budget)) {
    if (!Number.isInteger(value) || value < 0)
      throw new InputError(`budget.${dimension}`, "must be a non-negative integer");
  }
  return Object.freeze(budget);
}

function toFilters(filters: SearchOptions["filters"]): SearchFilters | undefined {
  if (!filters) return undefined;
  const time = (field: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    const ms = Date.parse(value);
    if (Number.isNaN(ms)) throw new InputError(`filters.${field}`, "must be an ISO-8601 time");
    return ms;
  };
  return {
    sessionKeys: filters.sessions,
    timeFromMs: time("from", filters.from),
    timeToMs: time("to", filters.to),
    speakers: filters.speakers,
  };
}
