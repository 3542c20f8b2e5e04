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
import type { ReadPool } from "./read-pool.ts";

/**
 * A scope's handle whose channel passes (BM25 and vector search) run in the read pool's workers
 * (decision 023); writes, forgets and every other read, lookups by id that cost less than a message
 * to a thread, stay on the calling thread's connection. The worker
 * binds the same scope through its own `forScope`, so the handle's rules hold there unchanged.
 */
export class PooledScopedStore implements ScopedStore {
  readonly scope: Scope;
  readonly #inner: ScopedStore;
  readonly #pool: ReadPool;

  constructor(inner: ScopedStore, pool: ReadPool) {
    this.scope = inner.scope;
    this.#inner = inner;
    this.#pool = pool;
  }

  // ── In the workers: the channel passes ────────────────────────────────────────────────────────
  async searchLexical(
    field: LexicalField,
    query: string,
    options: { limit: number; filters?: SearchFilters },
  ): Promise<Ranked[]> {
    return (await this.#pool.call(this.scope, "searchLexical", [field, query, options])) as Ranked[];
  }

  async searchVectors(
    space: string,
    vector: Float32Array,
    options: { limit: number; filters?: SearchFilters },
  ): Promise<Ranked[]> {
    return (await this.#pool.call(this.scope, "searchVectors", [space, vector, options])) as Ranked[];
  }

  async readVectors(space: string, rawNodeIds: readonly string[]): Promise<Map<string, Float32Array>> {
    return this.#inner.readVectors(space, rawNodeIds);
  }

  async readRawNodes(query: RawNodeQuery): Promise<RawNode[]> {
    return this.#inner.readRawNodes(query);
  }

  async readLinkedEntries(options: {
    hosts: readonly string[];
    ids: readonly string[];
    nearest?: { vector: Float32Array; perHost: number };
  }): Promise<IndexEntry[]> {
    return this.#inner.readLinkedEntries(options);
  }

  async knownImages(
    hashes: readonly string[],
    imageSpace: string | null,
  ): Promise<Map<string, { vector: Float32Array | null; derivedText: string | null }>> {
    return this.#inner.knownImages(hashes, imageSpace);
  }

  // ── On the calling thread ─────────────────────────────────────────────────────────────────
  commitSession(write: SessionWrite): Promise<CommitResult> {
    return this.#inner.commitSession(write);
  }
  readSessions(query: SessionQuery): Promise<SessionRecord[]> {
    return this.#inner.readSessions(query);
  }
  readBlob(
    hash: string,
    options?: { readonly thumbnail?: boolean },
  ): Promise<{ record: BlobRecord; data: Uint8Array }> {
    return this.#inner.readBlob(hash, options);
  }
  forget(request: ForgetRequest): Promise<ForgetResult> {
    return this.#inner.forget(request);
  }
  readAudit(options?: { readonly limit?: number; readonly offset?: number }): Promise<AuditEvent[]> {
    return this.#inner.readAudit(options);
  }
  stats(): Promise<ScopeStats> {
    return this.#inner.stats();
  }
  vectorSpacesInUse(): Promise<VectorSpace[]> {
    return this.#inner.vectorSpacesInUse();
  }
  replaceVectors(write: VectorReplacement): Promise<{ readonly vectors: number }> {
    return this.#inner.replaceVectors(write);
  }
  readIndex(options: { activeOnly: boolean }): Promise<IndexState> {
    return this.#inner.readIndex(options);
  }
  indexStatus(): Promise<{ version: number; needsRebuild: boolean }> {
    return this.#inner.indexStatus();
  }
  applyIndexPlan(
    plan: MaintenancePlan,
    options: { readonly spaces: { readonly text: string; readonly image: string | null }; readonly replace: boolean },
  ): Promise<void> {
    return this.#inner.applyIndexPlan(plan, options);
  }
  admitPrograms(programs: readonly BankProgram[], audit: BankAudit): Promise<void> {
    return this.#inner.admitPrograms(programs, audit);
  }
  readBank(options?: { readonly limit?: number; readonly offset?: number }): Promise<BankProgram[]> {
    return this.#inner.readBank(options);
  }
  retirePrograms(ids: readonly string[], audit: BankAudit): Promise<number> {
    return this.#inner.retirePrograms(ids, audit);
  }
  refreshPrograms(programs: readonly BankProgram[], audit: BankAudit): Promise<number> {
    return this.#inner.refreshPrograms(programs, audit);
  }
  commitVideo(write: VideoWrite): Promise<void> {
    return this.#inner.commitVideo(write);
  }
  readVideoItems(query: VideoItemQuery): Promise<VideoItem[]> {
    return this.#inner.readVideoItems(query);
  }
  readNotifierState(stream: string): Promise<NotifierRuleState[]> {
    return this.#inner.readNotifierState(stream);
  }
  readNotifierStreams(): Promise<string[]> {
    return this.#inner.readNotifierStreams();
  }
  importSession(write: SessionWrite, identity: SessionIdentity): Promise<{ imported: boolean }> {
    return this.#inner.importSession(write, identity);
  }
  readSessionParts(sessionIds: readonly string[]): Promise<Map<string, SessionPart[]>> {
    return this.#inner.readSessionParts(sessionIds);
  }
  restoreIndexAndAudit(
    index: {
      readonly entries: readonly IndexEntry[];
      readonly spaces: { readonly text: string; readonly image: string | null };
    },
    audit: readonly AuditEvent[],
  ): Promise<void> {
    return this.#inner.restoreIndexAndAudit(index, audit);
  }
}
