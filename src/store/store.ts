import type { Ranked } from "../core/ranked.ts";
import type { Scope } from "../core/scope.ts";
import type { IndexEntry, IndexState, MaintenancePlan } from "./index-records.ts";
import type {
  AuditEvent,
  BlobRecord,
  CommitResult,
  Entry,
  ForgetResult,
  ForgetTarget,
  RawNode,
  ScopeStats,
  SearchFilters,
  SessionRecord,
  SessionWrite,
} from "./records.ts";

/**
 * The storage seam. Data is reachable only through a `ScopedStore`, whose every method is
 * bound to one scope: there is no call that can name another scope's rows, so isolation
 * does not depend on callers remembering a filter.
 */
export interface Store {
  readonly kind: string;
  forScope(scope: Scope): ScopedStore;
  /** Every scope holding data: for administration (`cairn check`), never for answering a request. */
  listScopes(): Promise<Scope[]>;
  close(): Promise<void>;
}

export type LexicalField = "text" | "imageText";

export interface ScopedStore {
  readonly scope: Scope;
  /** Atomically writes a session, its raw nodes, blob references, channel rows, its entry and an audit event. */
  commitSession(write: SessionWrite): Promise<CommitResult>;
  getSession(id: string): Promise<SessionRecord>;
  findSessionByKey(key: string): Promise<SessionRecord | null>;
  listSessions(options?: { limit?: number; offset?: number }): Promise<SessionRecord[]>;
  getRawNode(id: string): Promise<RawNode>;
  /** Missing or foreign ids are omitted; order follows `ids`. */
  getRawNodes(ids: readonly string[]): Promise<RawNode[]>;
  listRawNodes(options: { sessionId: string }): Promise<RawNode[]>;
  getBlob(hash: string): Promise<{ record: BlobRecord; data: Uint8Array }>;
  getThumbnail(hash: string): Promise<Uint8Array>;
  /** BM25 over raw-node text or image-derived text; best first. */
  searchLexical(
    field: LexicalField,
    query: string,
    options: { limit: number; filters?: SearchFilters },
  ): Promise<Ranked[]>;
  /** Nearest raw nodes by cosine similarity in one vector space; best first, score = similarity. */
  searchVectors(
    space: string,
    vector: Float32Array,
    options: { limit: number; filters?: SearchFilters },
  ): Promise<Ranked[]>;
  /** Entries of the active index (all statuses unless `status` is given), oldest first. */
  listEntries(options?: { limit?: number; offset?: number; status?: Entry["status"] }): Promise<Entry[]>;
  /** The maintained index: active entries only (what maintenance plans against), or every entry. */
  readIndex(options: { activeOnly: boolean }): Promise<IndexState>;
  /** Increases with every change of the index; a cheap check for cached copies. */
  indexVersion(): Promise<number>;
  /** Entries hosted by `hosts` (overflow and merged) and entries named by `ids`, any status. */
  readLinkedEntries(options: {
    hosts: readonly string[];
    ids: readonly string[];
    nearest?: { vector: Float32Array; perHost: number };
  }): Promise<IndexEntry[]>;
  /** True when the store was migrated from a version without a maintained index and must replay it. */
  indexNeedsRebuild(): Promise<boolean>;
  /** Replaces the scope's index with the result of `plan` applied to an empty index, atomically. */
  rebuildIndex(plan: MaintenancePlan, spaces: { text: string; image: string | null }): Promise<void>;
  /** Raw nodes within `window` turns of the given ones in the same session, each with the given node it is near. */
  neighbours(rawNodeIds: readonly string[], window: number): Promise<Map<string, string>>;
  /** Stored text vectors of raw nodes in one space; missing ids are omitted. */
  getTextVectors(space: string, rawNodeIds: readonly string[]): Promise<Map<string, Float32Array>>;
  forget(target: ForgetTarget): Promise<ForgetResult>;
  listAudit(options?: { limit?: number; offset?: number }): Promise<AuditEvent[]>;
  stats(): Promise<ScopeStats>;
  /**
   * What is already derived from these images' pixels: the image vector in `imageSpace` and the
   * image-derived text (OCR, captions from a model). Both depend only on the bytes, so a write of a
   * known image reuses them instead of running the models again. Unknown hashes are omitted.
   */
  knownImages(
    hashes: readonly string[],
    imageSpace: string | null,
  ): Promise<Map<string, { vector: Float32Array | null; derivedText: string | null }>>;
}
