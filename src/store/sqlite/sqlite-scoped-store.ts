import type { Database } from "better-sqlite3";
import type { Ranked } from "../../core/ranked.ts";
import type { Scope } from "../../core/scope.ts";
import type { BankAudit, BankProgram } from "../bank-records.ts";
import type { IndexEntry, IndexState, MaintenancePlan } from "../index-records.ts";
import type {
  AuditEvent,
  BlobRecord,
  CommitResult,
  ForgetResult,
  RawNode,
  ScopeStats,
  SearchFilters,
  SessionRecord,
  SessionWrite,
  VectorReplacement,
  VectorSpace,
} from "../records.ts";
import type {
  ForgetRequest,
  LexicalField,
  RawNodeQuery,
  ScopedStore,
  SessionIdentity,
  SessionPart,
  SessionQuery,
} from "../store.ts";
import type { NotifierRuleState, VideoItem, VideoItemQuery, VideoWrite } from "../video-records.ts";
import { readAudit } from "./audit-events.ts";
import { commitSession, commitSessions, importSession } from "./commit-session.ts";
import { linkedEntries, textVectors } from "./derived-lookups.ts";
import { forget } from "./forget.ts";
import { readIndex } from "./index-rows.ts";
import { admitPrograms, readBank, refreshPrograms, retirePrograms } from "./question-bank.ts";
import { knownImages, readBlob } from "./read-blobs.ts";
import type { ReadPool } from "./read-pool.ts";
import { readRawNodes } from "./read-raw-nodes.ts";
import { readSessionParts, readSessions } from "./read-sessions.ts";
import { replaceVectors } from "./replace-vectors.ts";
import { createScopeContext, type ScopeContext, type StoreServices } from "./scope-context.ts";
import { applyIndexPlan, indexStatus, restoreIndexAndAudit } from "./scope-index.ts";
import { scopeStats } from "./scope-stats.ts";
import { searchLexical } from "./search-lexical.ts";
import { searchVectors } from "./search-vectors.ts";
import { commitVideo, readNotifierState, readNotifierStreams, readVideoItems } from "./video-items.ts";

/**
 * One scope's handle on the SQLite store. Each method delegates to the module of its job; every
 * statement those run binds this scope's key, so a foreign id looks exactly like a missing one.
 */
export class SqliteScopedStore implements ScopedStore {
  readonly scope: Scope;
  readonly #context: ScopeContext;

  /**
   * Where the channel passes (BM25 and vector search) run: the read pool's workers when the store
   * has one (decision 023; a worker binds the same scope through its own `forScope`, so the handle's
   * rules hold there unchanged), else this connection. Every other call, writes and reads by id
   * that cost less than a message to a thread, stays here.
   */
  readonly #pool: ReadPool | null;

  constructor(db: Database, store: StoreServices, scope: Scope, key: string, pool: ReadPool | null = null) {
    this.scope = scope;
    this.#context = createScopeContext(db, key, store);
    this.#pool = pool;
  }

  // ── Cold store ──────────────────────────────────────────────────────────────────────────────
  async commitSession(write: SessionWrite): Promise<CommitResult> {
    return commitSession(this.#context, write);
  }

  async commitSessions(writes: readonly SessionWrite[]): Promise<CommitResult[]> {
    return commitSessions(this.#context, writes);
  }

  async readSessions(query: SessionQuery): Promise<SessionRecord[]> {
    return readSessions(this.#context, query);
  }

  async readRawNodes(query: RawNodeQuery): Promise<RawNode[]> {
    return readRawNodes(this.#context, query);
  }

  async readBlob(
    hash: string,
    options: { thumbnail?: boolean } = {},
  ): Promise<{ record: BlobRecord; data: Uint8Array }> {
    return readBlob(this.#context, hash, options);
  }

  async knownImages(
    hashes: readonly string[],
    imageSpace: string | null,
  ): Promise<Map<string, { vector: Float32Array | null; derivedText: string | null }>> {
    return knownImages(this.#context, hashes, imageSpace);
  }

  async forget(request: ForgetRequest): Promise<ForgetResult> {
    return forget(this.#context, request);
  }

  async readAudit(options: { limit?: number; offset?: number } = {}): Promise<AuditEvent[]> {
    return readAudit(this.#context, options);
  }

  async stats(): Promise<ScopeStats> {
    return scopeStats(this.#context);
  }

  // ── Channel index ───────────────────────────────────────────────────────────────────────────
  async searchLexical(
    field: LexicalField,
    query: string,
    options: { limit: number; filters?: SearchFilters },
  ): Promise<Ranked[]> {
    if (this.#pool) return (await this.#pool.call(this.scope, "searchLexical", [field, query, options])) as Ranked[];
    return searchLexical(this.#context, field, query, options);
  }

  async searchVectors(
    space: string,
    vector: Float32Array,
    options: { limit: number; filters?: SearchFilters },
  ): Promise<Ranked[]> {
    if (this.#pool) return (await this.#pool.call(this.scope, "searchVectors", [space, vector, options])) as Ranked[];
    return searchVectors(this.#context, space, vector, options);
  }

  async readVectors(space: string, rawNodeIds: readonly string[]): Promise<Map<string, Float32Array>> {
    return textVectors(this.#context, space, rawNodeIds);
  }

  async replaceVectors(write: VectorReplacement): Promise<{ readonly vectors: number }> {
    return replaceVectors(this.#context, write);
  }

  async vectorSpacesInUse(): Promise<VectorSpace[]> {
    const { db, key } = this.#context;
    const spaces = db.prepare("SELECT name, kind, dimensions, table_name FROM vector_spaces ORDER BY name").all() as {
      name: string;
      kind: "text" | "image";
      dimensions: number;
      table_name: string;
    }[];
    // The scope is each vec0 table's partition key: one probe per space reads one partition.
    return spaces
      .filter((space) => db.prepare(`SELECT 1 FROM ${space.table_name} WHERE scope_key = ? LIMIT 1`).get(key))
      .map(({ name, kind, dimensions }) => ({ name, kind, dimensions }));
  }

  // ── Active index ────────────────────────────────────────────────────────────────────────────
  async readIndex(options: { activeOnly: boolean }): Promise<IndexState> {
    return readIndex(this.#context.db, this.#context.key, options);
  }

  async indexStatus(): Promise<{ version: number; needsRebuild: boolean }> {
    return indexStatus(this.#context);
  }

  async readLinkedEntries(options: { hosts: readonly string[]; ids: readonly string[] }): Promise<IndexEntry[]> {
    return linkedEntries(this.#context, options);
  }

  async applyIndexPlan(
    plan: MaintenancePlan,
    options: { readonly spaces: { readonly text: string; readonly image: string | null }; readonly replace: boolean },
  ): Promise<void> {
    applyIndexPlan(this.#context, plan, options);
  }

  // ── Question bank ──────────────────────────────────────────────────────────────────────────
  async admitPrograms(programs: readonly BankProgram[], audit: BankAudit): Promise<void> {
    admitPrograms(this.#context, programs, audit);
  }

  async readBank(options: { limit?: number; offset?: number } = {}): Promise<BankProgram[]> {
    return readBank(this.#context, options);
  }

  async refreshPrograms(programs: readonly BankProgram[], audit: BankAudit): Promise<number> {
    return refreshPrograms(this.#context, programs, audit);
  }

  async retirePrograms(ids: readonly string[], audit: BankAudit): Promise<number> {
    return retirePrograms(this.#context, ids, audit);
  }

  // ── Video memory ────────────────────────────────────────────────────────────────────────────
  async commitVideo(write: VideoWrite): Promise<void> {
    commitVideo(this.#context, write);
  }

  async readVideoItems(query: VideoItemQuery): Promise<VideoItem[]> {
    return readVideoItems(this.#context, query);
  }

  async readNotifierState(stream: string): Promise<NotifierRuleState[]> {
    return readNotifierState(this.#context, stream);
  }

  async readNotifierStreams(): Promise<string[]> {
    return readNotifierStreams(this.#context);
  }

  // ── Transfer ───────────────────────────────────────────────────────────────────────────────
  async importSession(write: SessionWrite, identity: SessionIdentity): Promise<{ imported: boolean }> {
    return { imported: importSession(this.#context, write, identity) };
  }

  async readSessionParts(sessionIds: readonly string[]): Promise<Map<string, SessionPart[]>> {
    return readSessionParts(this.#context, sessionIds);
  }

  async restoreIndexAndAudit(
    index: {
      readonly entries: readonly IndexEntry[];
      readonly spaces: { readonly text: string; readonly image: string | null };
    },
    audit: readonly AuditEvent[],
  ): Promise<void> {
    restoreIndexAndAudit(this.#context, index, audit);
  }
}
