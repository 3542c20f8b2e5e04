import type { Ranked } from "../core/ranked.ts";
import type { Scope } from "../core/scope.ts";
import type { BankAudit, BankProgram } from "./bank-records.ts";
import type { ForgetPlan, IndexEntry, IndexState, MaintenancePlan } from "./index-records.ts";
import type {
  AuditEvent,
  BlobRecord,
  CommitResult,
  ForgetResult,
  ForgetTarget,
  RawNode,
  RawNodeReindex,
  ScopeStats,
  SearchFilters,
  SessionRecord,
  SessionWrite,
  VectorReplacement,
  VectorSpace,
} from "./records.ts";
import type { NotifierRuleState, VideoItem, VideoItemQuery, VideoWrite } from "./video-records.ts";

/**
 * The storage seam. Data is reachable only through a `ScopedStore`, whose every method is
 * bound to one scope: there is no call that can name another scope's rows, so isolation
 * does not depend on callers remembering a filter.
 */
export interface Store {
  readonly kind: string;
  forScope(scope: Scope): ScopedStore;
  /**
   * Every scope holding data: for administration (`cairn check`), never for answering a request. With
   * `tenant`, only that tenant's scopes, read inside its own wall (a tenant admin listing its users).
   */
  listScopes(options?: { readonly tenant?: string }): Promise<Scope[]>;
  /** Every vector space the store holds vectors in: for administration (`cairn migrate`). */
  vectorSpaces(): Promise<VectorSpace[]>;
  /**
   * For `cairn check`: where the tenant's lexical search structures (the BM25 index and its term
   * statistics) disagree with the stored text they were built from, one line per problem, at most a
   * few dozen (empty when they agree). Reads the whole tenant, in pieces: memory does not grow with it.
   */
  verifyLexical(tenant: string): Promise<string[]>;
  /**
   * For `cairn check --repair`: builds the tenant's lexical search structures again from the stored
   * text, in one transaction. Derived data only: no raw node, index entry or audit event changes.
   */
  rebuildLexical(tenant: string): Promise<void>;
  /**
   * Whether one audit secret serves the whole store (SQLite: `<store>/audit.key`) or each tenant has
   * its own (Postgres). The secret keys the hashes a forget leaves in the audit log (decision 007).
   */
  readonly auditSecretPer: "store" | "tenant";
  /** For `cairn migrate`: the secret the tenant's forgets hash under, or null if it has none yet. */
  readAuditSecret(tenant: string): Promise<Uint8Array | null>;
  /**
   * For `cairn migrate --carry-audit-secret`: makes `secret` the tenant's (or the store's) audit
   * secret. A no-op when it already is; a `ConflictError`, changing nothing, when the secret in place
   * already keys a hash in the audit log (the hashes it made would stop matching).
   */
  adoptAuditSecret(tenant: string, secret: Uint8Array): Promise<void>;
  close(): Promise<void>;
}

export type LexicalField = "text" | "imageText";

/** Which sessions to read: by id, by key (the caller's own ids), or every one in time order (paged). */
export type SessionQuery =
  | { readonly ids: readonly string[] }
  | { readonly keys: readonly string[] }
  | { readonly limit?: number; readonly offset?: number };

/** Which raw nodes to read: by id (order kept, missing omitted), a session's in turn order, or the neighbours of some. */
export type RawNodeQuery =
  | { readonly ids: readonly string[] }
  | { readonly sessionId: string }
  /** Raw nodes within `window` turns of `near` in the same session, excluding `near` themselves. */
  | { readonly near: readonly string[]; readonly window: number };

/** Who a session is in the store it is copied from: kept by `importSession`. */
export interface SessionIdentity {
  readonly sessionId: string;
  readonly createdMs: number;
  /** The raw nodes' ids, in the order of the write's raw nodes. */
  readonly rawNodeIds: readonly string[];
  /** The parts appended to it (`appendTurns`), kept so a retried append is still acknowledged, not stored again. */
  readonly parts?: readonly SessionPart[];
}

/** One part a session was written in by `appendTurns`: a retry of the same part key is a duplicate. */
export interface SessionPart {
  readonly partKey: string;
  /** Turn number of its first turn, and how many turns it added (some may since have been forgotten). */
  readonly firstTurn: number;
  readonly turnCount: number;
  readonly createdMs: number;
}

/** A forget as planned: the target, and the index repair made against the index as it stood. */
export interface ForgetRequest {
  readonly target: ForgetTarget;
  /** `rawNodeIds` must be exactly the raw nodes the target covers now; otherwise the plan is stale. */
  readonly plan: ForgetPlan;
  /**
   * Surviving raw nodes whose index rows are re-derived without the forgotten ones (planned with the
   * plan: a raw node here that is gone or forgotten makes the plan stale). None when absent.
   */
  readonly reindex?: readonly RawNodeReindex[];
}

/**
 * One scope's handle: every method is bound to that scope. Four groups, each with its own
 * conformance file (test/store/): the cold store, the channel index, the active index, transfer.
 */
export interface ScopedStore {
  readonly scope: Scope;

  // ── Cold store: raw evidence, immutable until an audited forget ─────────────────────────────
  /**
   * Atomically writes a session, its raw nodes, blob references, channel rows, its maintenance plan
   * (against the plan's base version: a stale plan is an `IndexVersionConflict`) and audit events.
   */
  commitSession(write: SessionWrite): Promise<CommitResult>;
  /**
   * Several sessions in one transaction, in order, each as `commitSession` would write it: every
   * write lands or none does (a conflict or stale plan anywhere rolls back the lot), and a backend
   * with one durable commit per transaction pays it once. Each plan is checked against the index
   * version the writes before it left. In a batch `@n` names the n-th raw node of the whole batch
   * (the writes' raw nodes counted in order), so a plan may point at an earlier write's raw nodes,
   * never a later one's (`batch-writes.ts`). Returns each write's result in order.
   */
  commitSessions(writes: readonly SessionWrite[]): Promise<CommitResult[]>;
  readSessions(query: SessionQuery): Promise<SessionRecord[]>;
  readRawNodes(query: RawNodeQuery): Promise<RawNode[]>;
  /** An image's original bytes, or its 256 px WebP thumbnail; visible only while a raw node of the scope uses it. */
  readBlob(hash: string, options?: { readonly thumbnail?: boolean }): Promise<{ record: BlobRecord; data: Uint8Array }>;
  /**
   * What is already derived from these images' pixels: the image vector in `imageSpace` and the
   * image-derived text (OCR, captions from a model). Both depend only on the bytes, so a write of a
   * known image reuses them instead of running the models again. Unknown hashes are omitted.
   */
  knownImages(
    hashes: readonly string[],
    imageSpace: string | null,
  ): Promise<Map<string, { vector: Float32Array | null; derivedText: string | null }>>;
  /**
   * Deletes the target's raw nodes and everything derived from them, applies the plan's index
   * repair in the same transaction, and records one audit event with counts, never content. A plan
   * made against another index version, or for other raw nodes, is an `IndexVersionConflict`.
   */
  forget(request: ForgetRequest): Promise<ForgetResult>;
  /** Newest first; no limit means all. */
  readAudit(options?: { readonly limit?: number; readonly offset?: number }): Promise<AuditEvent[]>;
  stats(): Promise<ScopeStats>;

  // ── Channel index: what the retrieval channels search ───────────────────────────────────────
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
  /** Stored text vectors of raw nodes in one space; missing ids are omitted. */
  readVectors(space: string, rawNodeIds: readonly string[]): Promise<Map<string, Float32Array>>;
  /**
   * The vector spaces holding at least one vector of this scope, by name. A space's name carries the
   * model that made it, so this says which models built the scope's vectors (a search with other
   * models would find nothing in them).
   */
  vectorSpacesInUse(): Promise<VectorSpace[]>;
  /**
   * Replaces every vector of the scope (`cairn reembed`), in one transaction: the scope's vectors in
   * every space are deleted, `write`'s inserted in its declared spaces (image vectors also cached per
   * blob), the index marked for a rebuild (its entries hold the old vectors; the version grows) and
   * the audit event written. Raw nodes, blobs and lexical rows are not touched. A raw node must be
   * given for every raw node of the scope and none other (an `InputError`, nothing changed).
   */
  replaceVectors(write: VectorReplacement): Promise<{ readonly vectors: number }>;

  // ── Active index: entries, their pointers and links ──────────────────────────────────────────
  /** The maintained index: active entries only (what maintenance plans against), or every entry. */
  readIndex(options: { activeOnly: boolean }): Promise<IndexState>;
  /**
   * The index version (it increases with every change: a cheap check for cached copies) and whether
   * the store was migrated from a version without a maintained index and must replay it.
   */
  indexStatus(): Promise<{ version: number; needsRebuild: boolean }>;
  /**
   * Entries hosted by `hosts` (overflow, and superseded ones a forget re-hosted; not merged ones, whose pointers
   * their host already holds) and entries named by `ids`, any status.
   */
  readLinkedEntries(options: { hosts: readonly string[]; ids: readonly string[] }): Promise<IndexEntry[]>;
  /**
   * Applies a maintenance plan whose pointers name stored raw nodes. With `replace`, the scope's
   * index is first emptied and the plan applied to the empty index (a rebuild), atomically.
   */
  applyIndexPlan(
    plan: MaintenancePlan,
    options: { readonly spaces: { readonly text: string; readonly image: string | null }; readonly replace: boolean },
  ): Promise<void>;

  // ── Question bank: verified retrieval programs (PMMC), never answers ────────────────────────
  /**
   * Adds verified programs and one audit event, atomically. Every program needs evidence, all of it
   * raw nodes of this scope (else an `InputError` and nothing is written): a forget of any of them
   * retires the program in the same transaction that deletes the raw node.
   */
  admitPrograms(programs: readonly BankProgram[], audit: BankAudit): Promise<void>;
  /** The scope's programs, oldest first; no limit means all. */
  readBank(options?: { readonly limit?: number; readonly offset?: number }): Promise<BankProgram[]>;
  /** Removes programs by id (unknown ids are ignored) with one audit event; returns how many went. */
  retirePrograms(ids: readonly string[], audit: BankAudit): Promise<number>;
  /**
   * Replaces the evidence, covered span and verification of programs already banked (matched by id;
   * unknown ids are ignored) with one audit event, atomically: a re-verification that proved them on
   * the current state. The question, program and vectors stay. Evidence as in `admitPrograms` (an
   * `InputError` and nothing written otherwise). Returns how many were refreshed.
   */
  refreshPrograms(programs: readonly BankProgram[], audit: BankAudit): Promise<number>;
  // ── Video memory: entities, galleries, episodic levels (ReflectWorld-MM) ─────────────────────
  /**
   * Puts and removes video items and appends audit events, atomically. Every source must name a raw
   * node of the scope (an `InputError` otherwise, nothing written), so a forget can always find what
   * derives from what it deletes.
   */
  commitVideo(write: VideoWrite): Promise<void>;
  readVideoItems(query: VideoItemQuery): Promise<VideoItem[]>;
  /** The notifier's saved record for a stream's rules (written by `commitVideo`), by rule id order. */
  readNotifierState(stream: string): Promise<NotifierRuleState[]>;
  /** The sources (stream names) with a saved notifier record, sorted: what a copy of the scope must carry over. */
  readNotifierStreams(): Promise<string[]>;

  // ── Transfer: a scope copied between stores (`cairn migrate`), ids and times kept ──────────────
  /**
   * Writes a session exactly as another store holds it: its id, creation time and raw-node ids are
   * kept; the write's plan must be empty (the index comes with `restoreIndexAndAudit`) and no audit
   * event is added. The same session again is a no-op (`imported: false`: a resumed copy); another
   * session with its key or id is a `ConflictError`.
   */
  importSession(write: SessionWrite, identity: SessionIdentity): Promise<{ imported: boolean }>;
  /** The parts of these sessions (ordered by first turn); a session without parts, or not in the scope, is omitted. */
  readSessionParts(sessionIds: readonly string[]): Promise<Map<string, SessionPart[]>>;
  /**
   * Replaces the scope's index with these entries (every status, pointers and links as they are) and
   * its audit log with these events (oldest first; ids, times and details kept), in one transaction.
   * Pointers must name stored raw nodes. The index version still only grows.
   */
  restoreIndexAndAudit(
    index: {
      readonly entries: readonly IndexEntry[];
      readonly spaces: { readonly text: string; readonly image: string | null };
    },
    audit: readonly AuditEvent[],
  ): Promise<void>;
}
