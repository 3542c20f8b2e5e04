import { ConflictError } from "../core/errors.ts";
import { vectorFromBytes } from "../core/vectors.ts";

/**
 * The bounded active index (C3M): compact entries grouped into pages, each pointing back to the
 * raw nodes it was built from. Entries guide routing; raw nodes are the evidence. Maintenance
 * (RAMU) only ever adds pointers or changes an entry's status: no path removes a pointer, so
 * provenance (DESIGN invariant 2) holds by construction and `checkIndex` proves it on any store.
 */

export type Relation = "same" | "update" | "distinct" | "uncertain";

/**
 * - `active`: in the index, on a page, counted against the bounds.
 * - `superseded`: an earlier state; reachable through its successor's `predecessor` link.
 * - `merged`: consolidated into `host`, which holds all its pointers too.
 * - `overflow`: the capacity fallback; pointers kept, reachable through `host` (no routing text is charged).
 */
export type EntryStatus = "active" | "superseded" | "merged" | "overflow";

/** What routing text is rendered from. Mergeable: counts add, lists are capped. */
export interface EntryDigest {
  readonly speakers: readonly string[];
  /** Entity mentions (names, capitalised phrases), lower-cased, with counts. */
  readonly entities: Readonly<Record<string, number>>;
  /** Content words with counts. */
  readonly keywords: Readonly<Record<string, number>>;
  /** Numbers and quantities mentioned (as written, normalised). */
  readonly numbers: readonly string[];
  /** Image captions and image-derived text. */
  readonly imageText: readonly string[];
  /** Short representative sentences, best first. */
  readonly snippets: readonly string[];
  /** Mentions of a change of state ("moved", "now", "no longer", ...). */
  readonly stateCues: number;
  /**
   * What the entries reached through this one are about (its overflow guests and earlier states, and
   * theirs in turn), so routing can find them behind it (decision 029). Derived from the index alone,
   * query-blind, capped; absent on an entry that reaches nothing, and on entries written before it.
   */
  readonly cover?: GuestCover;
}

/** The terms of the entries an entry reaches through its links, bounded (`maintain/guest-cover.ts`). */
export interface GuestCover {
  /** Content words and entity words of the reached entries' digests, with summed counts, the most frequent first. */
  readonly terms: Readonly<Record<string, number>>;
  /** How many entries it covers. */
  readonly entries: number;
  /**
   * The unit mean of the covered entries' text vectors (base64 of little-endian float32), in the
   * entry's own vector space; `vectorWeight` raw-node vectors are averaged in it.
   */
  readonly vector?: string;
  readonly vectorWeight?: number;
}

export interface IndexEntry {
  readonly id: string;
  readonly status: EntryStatus;
  /** Page of an active entry; null otherwise. */
  readonly page: number | null;
  readonly digest: EntryDigest;
  readonly routingText: string;
  readonly tokens: number;
  /** Unit-length routing vector: the mean of its raw nodes' text vectors. */
  readonly vector: Float32Array;
  /** How many raw-node vectors `vector` averages (to merge means exactly). */
  readonly vectorWeight: number;
  readonly imageVector: Float32Array | null;
  readonly imageWeight: number;
  /** Raw-node ids this entry points at directly, in arrival order. */
  readonly pointers: readonly string[];
  readonly sessions: readonly string[];
  readonly timeStartMs: number;
  readonly timeEndMs: number;
  /** Update link: the earlier state this entry supersedes. */
  readonly predecessor: string | null;
  /** For `merged` and `overflow` entries: the active entry that reaches them. */
  readonly host: string | null;
  /** How the entry came to be or last changed: add, keep, merge, update, consolidate, overflow. */
  readonly lastAction: string;
  /** Relation label recorded by the last judgement that touched the entry. */
  readonly relation: Relation | null;
  readonly createdMs: number;
  readonly updatedMs: number;
}

/** One scope's index. `version` increases with every change, for optimistic concurrency. */
export interface IndexState {
  readonly version: number;
  readonly entries: ReadonlyMap<string, IndexEntry>;
}

/** Raw nodes of an incoming segment that are not stored yet are named `@<position in session>`. */
export type PointerRef = string;

/** The session position a pending pointer (`@n`) names; undefined for a stored raw node's id. */
export function pendingPosition(pointer: PointerRef): number | undefined {
  if (!pointer.startsWith("@")) return undefined;
  const position = Number(pointer.slice(1));
  return Number.isInteger(position) && position >= 0 ? position : undefined;
}

/** A pointer with a pending `@n` named by `ids[n]` (left as it is when `ids` has none); ids unchanged. */
export function resolvePending(ids: readonly string[]): (pointer: PointerRef) => PointerRef {
  return (pointer) => {
    const position = pendingPosition(pointer);
    return position === undefined ? pointer : (ids[position] ?? pointer);
  };
}

/** Store-level changes. Maintenance can put entries and add pointers; nothing removes a pointer. */
export type IndexOp =
  | { readonly op: "put"; readonly entry: IndexEntry }
  | { readonly op: "link"; readonly entryId: string; readonly pointers: readonly PointerRef[] }
  /** Only lossy baselines (MemRefine-style delete) emit this; the store refuses it. */
  | { readonly op: "drop"; readonly entryId: string };

/**
 * Index changes of a forget. Unlike maintenance, a forget may take pointers away, but only
 * pointers to the raw nodes it deletes, and remove an entry only once it points at nothing: the
 * store refuses any other removal, so a forget can never strand surviving evidence.
 */
export type ForgetOp =
  /** Re-derived or re-linked entry; its pointers are not touched by a put. */
  | { readonly op: "put"; readonly entry: IndexEntry }
  | { readonly op: "unlink"; readonly entryId: string; readonly pointers: readonly string[] }
  | { readonly op: "remove"; readonly entryId: string };

/** What a forget's index repair did, for its audit event: entry ids and counts, never content. */
export interface ForgetRepairs {
  readonly removed: readonly string[];
  readonly rederived: readonly string[];
  /** Entries that took a removed active entry's place on its page. */
  readonly promoted: readonly string[];
  /** Entries now reached through another host or successor than before. */
  readonly relinked: readonly string[];
  /** Entries found unreachable before the forget (a damaged index), hosted under an active entry. */
  readonly orphansHosted: readonly string[];
  /** Active entries moved under a host (maintenance's overflow fallback) to keep the index within its bounds. */
  readonly overflowed: readonly string[];
}

/**
 * The index side of a forget, planned against `baseVersion` by a pure function and applied by the
 * store in the same transaction that deletes `rawNodeIds`; a changed index means plan again.
 */
export interface ForgetPlan {
  readonly baseVersion: number;
  readonly rawNodeIds: readonly string[];
  readonly ops: readonly ForgetOp[];
  readonly repairs: ForgetRepairs;
  /** Maintenance events the repair takes (an `index.overflow` per overflowed entry), written with the forget's. */
  readonly audits: readonly MaintenanceAudit[];
}

export interface MaintenanceAudit {
  readonly action: string;
  readonly subject: string;
  readonly details: Readonly<Record<string, unknown>>;
}

export interface MaintenancePlan {
  /**
   * The index version the plan was made against; the store refuses it if the index changed since.
   * Null for a plan that only creates new entries, which does not depend on the index's state.
   */
  readonly baseVersion: number | null;
  readonly ops: readonly IndexOp[];
  readonly audits: readonly MaintenanceAudit[];
  readonly warnings: readonly string[];
  /** Capacity fallbacks taken by this plan. */
  readonly overflowRepairs: number;
}

/**
 * The index changed since a plan was made against it. `addSession` re-reads and re-plans; it
 * surfaces (a `ConflictError`, so HTTP answers 409) only when other writers keep winning.
 */
export class IndexVersionConflict extends ConflictError {
  constructor(expected: number, actual: number) {
    super(`the active index changed under this write (version ${actual}, planned against ${expected}); retry it`);
  }
}

/** A cover's mean vector, decoded; null when it has none. */
export function coverVector(cover: GuestCover | undefined): Float32Array | null {
  if (!cover?.vector) return null;
  return vectorFromBytes(Buffer.from(cover.vector, "base64"));
}
