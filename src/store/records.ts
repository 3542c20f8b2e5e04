import type { MaintenancePlan } from "./index-records.ts";

/** Plain records crossing the Store seam. Times are ISO-8601 strings at the edge, epoch ms inside. */

/**
 * An image of a raw node. `hash` is null for a caption-only image: the source referenced an image
 * whose pixels were never available (e.g. a dead URL in a dataset); only its caption is kept.
 */
export interface ImageRef {
  readonly ordinal: number;
  readonly hash: string | null;
  readonly mediaType: string | null;
  readonly bytes: number | null;
  readonly width: number | null;
  readonly height: number | null;
  /** Caption supplied with the input, if any. */
  readonly caption: string | null;
  /** Text read from the pixels (OCR), if a reader ran. */
  readonly derivedText: string | null;
  /** Where the image came from (input path or URL), for provenance. */
  readonly origin: string | null;
}

export interface RawNode {
  readonly id: string;
  readonly sessionId: string;
  readonly sessionKey: string;
  readonly turn: number;
  readonly speaker: string | null;
  readonly role: string | null;
  readonly text: string;
  readonly time: string;
  readonly source: string | null;
  readonly uri: string | null;
  readonly images: readonly ImageRef[];
  readonly metadata: Readonly<Record<string, unknown>>;
}

export interface SessionRecord {
  readonly id: string;
  /** The caller's own session id (`session` in the JSONL), unique within a scope. */
  readonly key: string;
  readonly time: string;
  readonly source: string | null;
  readonly turnCount: number;
  readonly imageCount: number;
  readonly contentHash: string;
  readonly createdAt: string;
}

export interface BlobRecord {
  readonly hash: string;
  readonly mediaType: string;
  readonly bytes: number;
  readonly width: number;
  readonly height: number;
}

/** An entry of the maintained active index, as callers see it. */
export interface Entry {
  readonly id: string;
  /** active: in the index; superseded / merged / overflow: reachable through `predecessor` links or `host`. */
  readonly status: "active" | "superseded" | "merged" | "overflow";
  readonly page: number | null;
  readonly routingText: string;
  readonly tokens: number;
  /** Session keys (the caller's ids) the entry's raw nodes came from. */
  readonly sessions: readonly string[];
  readonly timeStart: string;
  readonly timeEnd: string;
  /** Raw-node ids the entry points at directly. */
  readonly pointers: readonly string[];
  /** The earlier state this entry updates (a version chain). */
  readonly predecessor: string | null;
  /** For merged and overflow entries: the active entry through which they are reached. */
  readonly host: string | null;
  readonly lastAction: string;
  readonly relation: string | null;
  /** True for the active end of a version chain. */
  readonly latest: boolean;
  readonly entities: readonly string[];
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface AuditEvent {
  readonly id: string;
  readonly time: string;
  readonly action: string;
  readonly subject: string;
  readonly details: Readonly<Record<string, unknown>>;
}

/** A new blob: its bytes and thumbnail are made before the transaction that references them. */
export interface BlobWrite extends BlobRecord {
  readonly data: Uint8Array;
  readonly thumbnail: Uint8Array;
}

export interface RawNodeWrite {
  readonly turn: number;
  readonly speaker: string | null;
  readonly role: string | null;
  readonly text: string;
  /**
   * What lexical search reads for this raw node (its text with context: speaker, date, neighbours, images;
   * see store/index-text.ts). Derived, never shown as evidence; `text` when absent.
   */
  readonly indexText?: string;
  readonly timeMs: number;
  readonly source: string | null;
  readonly uri: string | null;
  readonly metadata: Record<string, unknown>;
  readonly images: readonly {
    /** Null for a caption-only image. */
    readonly hash: string | null;
    readonly caption: string | null;
    readonly derivedText: string | null;
    readonly origin: string | null;
  }[];
  /** One vector per text vector space named in the session write. */
  readonly textVectors: Readonly<Record<string, Float32Array>>;
  /** Per image (same order as `images`), one vector per image space. */
  readonly imageVectors: readonly Readonly<Record<string, Float32Array>>[];
}

/**
 * A surviving raw node's index rows made again without the raw nodes a forget removes (its index text
 * quoted their gist as neighbouring turns): the lexical body of its text field and its text vectors are
 * replaced, in the forget's transaction. Raw text, images and image-text rows are untouched.
 */
export interface RawNodeReindex {
  readonly rawNodeId: string;
  /** The new index text (what `RawNodeWrite.indexText` would be now). */
  readonly indexText: string;
  /** The new vector in each text space the node has one in, by space name. */
  readonly textVectors: Readonly<Record<string, Float32Array>>;
}

export interface VectorSpace {
  /** e.g. `text:use-lite-512` or `image:mobilenet-v2-1280`. */
  readonly name: string;
  readonly kind: "text" | "image";
  readonly dimensions: number;
}

/**
 * Every vector of a scope, made again by other models (`cairn reembed`): the vectors of each raw node
 * in the declared spaces, and the audit event that records the change. Raw evidence is not in it.
 */
export interface VectorReplacement {
  readonly spaces: readonly VectorSpace[];
  readonly rawNodes: readonly {
    readonly rawNodeId: string;
    readonly textVectors: Readonly<Record<string, Float32Array>>;
    /** Per image of the raw node, in its order: its vector per space (empty when it has no pixels). */
    readonly imageVectors: readonly Readonly<Record<string, Float32Array>>[];
  }[];
  readonly audit: { readonly action: string; readonly subject: string; readonly details: Record<string, unknown> };
}

export interface SessionWrite {
  readonly key: string;
  readonly timeMs: number;
  readonly source: string | null;
  readonly contentHash: string;
  readonly blobs: readonly BlobWrite[];
  readonly rawNodes: readonly RawNodeWrite[];
  readonly spaces: readonly VectorSpace[];
  /**
   * Set when the raw nodes extend the session `key` (`Memory.appendTurns`) instead of making it: they
   * follow its last turn, earlier raw nodes untouched. A part key already recorded for the session
   * makes the write a duplicate (a retried append); a session not stored yet is created by it.
   */
  readonly append?: { readonly partKey: string };
  /** The maintenance plan for the active index, applied in the same transaction (against its base version). */
  readonly index: {
    readonly plan: MaintenancePlan;
    readonly spaces: { readonly text: string; readonly image: string | null };
  };
}

export interface CommitResult {
  readonly session: SessionRecord;
  readonly rawNodeIds: readonly string[];
  /** Index entries this session created or changed (none for a duplicate). */
  readonly entryIds: readonly string[];
  /** True when an identical session was already stored: nothing was written. */
  readonly duplicate: boolean;
}

export interface SearchFilters {
  readonly sessionKeys?: readonly string[];
  readonly timeFromMs?: number;
  readonly timeToMs?: number;
  readonly speakers?: readonly string[];
}

export type ForgetTarget = { readonly session: string } | { readonly rawNode: string } | { readonly all: true };

export interface ForgetResult {
  readonly sessions: number;
  readonly rawNodes: number;
  readonly entries: number;
  /**
   * Distinct images the scope no longer uses after the forget; counted from the scope's own rows, so it
   * never tells whether anyone else holds the same image (the bytes go once the tenant uses them nowhere).
   */
  readonly blobsDeleted: number;
  readonly auditId: string;
  /** How the store made sure the forgotten bytes are gone from its files; absent where it cannot (Postgres, decision 009). */
  readonly erasure?: ForgetErasure;
}

/**
 * The SQLite store's erasure after a forget (decision 038): "clean" when a scan of the database file
 * found none of the forgotten values where no live row is, "vacuumed" when it found some and rewrote
 * the database, "pending" when a reader holding an older snapshot kept the WAL (the next forget or
 * open finishes it).
 */
export interface ForgetErasure {
  readonly outcome: "clean" | "vacuumed" | "pending";
  readonly pagesScanned: number;
  readonly ms: number;
}

export interface ScopeStats {
  readonly sessions: number;
  readonly rawNodes: number;
  readonly images: number;
  readonly entries: number;
  readonly auditEvents: number;
}
