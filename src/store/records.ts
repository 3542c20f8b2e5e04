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

export interface Entry {
  readonly id: string;
  readonly sessionId: string;
  readonly routingText: string;
  readonly timeStart: string;
  readonly timeEnd: string;
  readonly pointers: readonly string[];
  readonly createdAt: string;
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

export interface VectorSpace {
  /** e.g. `text:use-lite-512` or `image:mobilenet-v2-1280`. */
  readonly name: string;
  readonly kind: "text" | "image";
  readonly dimensions: number;
}

export interface SessionWrite {
  readonly key: string;
  readonly timeMs: number;
  readonly source: string | null;
  readonly contentHash: string;
  readonly blobs: readonly BlobWrite[];
  readonly rawNodes: readonly RawNodeWrite[];
  readonly spaces: readonly VectorSpace[];
  readonly entry: { readonly routingText: string };
}

export interface CommitResult {
  readonly session: SessionRecord;
  readonly rawNodeIds: readonly string[];
  readonly entryId: string;
  /** True when an identical session was already stored: nothing was written. */
  readonly duplicate: boolean;
}

export interface SearchFilters {
  readonly sessionKeys?: readonly string[];
  readonly timeFromMs?: number;
  readonly timeToMs?: number;
  readonly speakers?: readonly string[];
}

export interface Ranked {
  readonly id: string;
  readonly score: number;
}

export type ForgetTarget = { readonly session: string } | { readonly rawNode: string } | { readonly all: true };

export interface ForgetResult {
  readonly sessions: number;
  readonly rawNodes: number;
  readonly entries: number;
  readonly blobsDeleted: number;
  readonly auditId: string;
}

export interface ScopeStats {
  readonly sessions: number;
  readonly rawNodes: number;
  readonly images: number;
  readonly entries: number;
  readonly auditEvents: number;
}
