import { InvariantError } from "../core/errors.ts";
import { roundForRecord } from "../core/round.ts";
import { cosine, mergeMeans } from "../core/vectors.ts";
import type {
  EntryDigest,
  GuestCover,
  IndexEntry,
  IndexOp,
  IndexState,
  MaintenanceAudit,
  PointerRef,
  Relation,
} from "../store/index-records.ts";
import type { IndexBounds, IndexUtilisation } from "./config.ts";
import { mergeDigests, renderRoutingText } from "./digest.ts";
import { coverOfReached, mergeCovers, trimCover } from "./guest-cover.ts";

/** An entry about to enter the index: one coherent segment of an incoming session. */
export interface IncomingEntry {
  readonly digest: EntryDigest;
  readonly vector: Float32Array;
  readonly vectorWeight: number;
  readonly imageVector: Float32Array | null;
  readonly imageWeight: number;
  readonly pointers: readonly PointerRef[];
  readonly sessions: readonly string[];
  readonly timeStartMs: number;
  readonly timeEndMs: number;
}

/** Bytes charged per pointer (an id and its row), whatever the id's length. */
export const pointerBytes = 32;

/**
 * A copy-on-write view of an index state that records every change as store ops and audit
 * events. Maintenance policies work on it; the store then applies the same ops atomically.
 */
export class WorkingIndex {
  readonly bounds: IndexBounds;
  readonly ops: IndexOp[] = [];
  readonly audits: MaintenanceAudit[] = [];
  readonly warnings: string[] = [];
  overflowRepairs = 0;
  readonly #entries: Map<string, IndexEntry>;
  readonly #newId: () => string;
  readonly #now: number;

  constructor(state: IndexState, bounds: IndexBounds, newId: () => string, nowMs: number) {
    this.#entries = new Map(state.entries);
    this.bounds = bounds;
    this.#newId = newId;
    this.#now = nowMs;
  }

  get entries(): ReadonlyMap<string, IndexEntry> {
    return this.#entries;
  }

  get maxEntryTokens(): number {
    return Math.max(1, Math.floor(this.bounds.tokens / this.bounds.entries));
  }

  active(): IndexEntry[] {
    return [...this.#entries.values()].filter((entry) => entry.status === "active");
  }

  get(id: string): IndexEntry {
    const entry = this.#entries.get(id);
    if (!entry) throw new InvariantError("working-index-entry", `index entry ${id} is not in the working index`, [id]);
    return entry;
  }

  put(entry: IndexEntry): IndexEntry {
    const stamped = { ...entry, updatedMs: this.#now };
    this.#entries.set(entry.id, stamped);
    this.ops.push({ op: "put", entry: stamped });
    return stamped;
  }

  link(entryId: string, pointers: readonly PointerRef[]): void {
    const entry = this.get(entryId);
    const known = new Set(entry.pointers);
    const added = pointers.filter((pointer) => !known.has(pointer));
    if (added.length === 0) return;
    this.#entries.set(entryId, { ...entry, pointers: [...entry.pointers, ...added] });
    this.ops.push({ op: "link", entryId, pointers: added });
  }

  /** Removes an entry and its pointers from the index. Lossy: only baselines that delete use it. */
  drop(entryId: string): void {
    this.#entries.delete(entryId);
    this.ops.push({ op: "drop", entryId });
  }

  audit(action: string, subject: string, details: Record<string, unknown>): void {
    this.audits.push({ action, subject, details });
  }

  /** A new active entry (page assigned later by `placeOnPages`) from an incoming segment. */
  create(
    incoming: IncomingEntry,
    fields: { lastAction: string; relation: Relation | null; predecessor?: string | null; page?: number | null },
  ): IndexEntry {
    const routing = renderRoutingText(
      incoming.digest,
      { startMs: incoming.timeStartMs, endMs: incoming.timeEndMs },
      this.maxEntryTokens,
    );
    const entry = this.put({
      id: this.#newId(),
      status: "active",
      page: fields.page ?? null,
      digest: incoming.digest,
      routingText: routing.text,
      tokens: routing.tokens,
      vector: incoming.vector,
      vectorWeight: incoming.vectorWeight,
      imageVector: incoming.imageVector,
      imageWeight: incoming.imageWeight,
      pointers: [],
      sessions: [...incoming.sessions],
      timeStartMs: incoming.timeStartMs,
      timeEndMs: incoming.timeEndMs,
      predecessor: fields.predecessor ?? null,
      host: null,
      lastAction: fields.lastAction,
      relation: fields.relation,
      createdMs: this.#now,
      updatedMs: this.#now,
    });
    this.link(entry.id, incoming.pointers);
    return this.get(entry.id);
  }

  /**
   * Folds `source` (an incoming segment or another entry) into active entry `hostId`: pointers,
   * digest, vectors, span and sessions all become the union; routing text is re-rendered.
   */
  absorb(
    hostId: string,
    source: IncomingEntry | IndexEntry,
    fields: { lastAction: string; relation: Relation | null },
  ): IndexEntry {
    const host = this.get(hostId);
    // What either side leads to stays covered (decision 029).
    const cover = mergeCovers(host.digest.cover, source.digest.cover);
    const digest = this.#withCover({ ...host, digest: mergeDigests(host.digest, source.digest) }, cover);
    const timeStartMs = Math.min(host.timeStartMs, source.timeStartMs);
    const timeEndMs = Math.max(host.timeEndMs, source.timeEndMs);
    const routing = renderRoutingText(digest, { startMs: timeStartMs, endMs: timeEndMs }, this.maxEntryTokens);
    this.link(hostId, source.pointers);
    return this.put({
      ...this.get(hostId),
      digest,
      routingText: routing.text,
      tokens: routing.tokens,
      vector: mergeMeans(host.vector, host.vectorWeight, source.vector, source.vectorWeight) ?? host.vector,
      vectorWeight: host.vectorWeight + source.vectorWeight,
      imageVector: mergeMeans(host.imageVector, host.imageWeight, source.imageVector, source.imageWeight),
      imageWeight: host.imageWeight + source.imageWeight,
      sessions: [...new Set([...host.sessions, ...source.sessions])],
      timeStartMs,
      timeEndMs,
      lastAction: fields.lastAction,
      relation: fields.relation,
    });
  }

  /**
   * Adds `reached` (and what it covers) to the guest cover of `hostId` (decision 029): called when
   * `hostId` comes to reach it, as an overflow fallback's host or as the later state of an update.
   */
  coverReached(hostId: string, reached: IndexEntry): IndexEntry {
    const host = this.get(hostId);
    return this.put({
      ...host,
      digest: this.#withCover(host, mergeCovers(host.digest.cover, coverOfReached(reached))),
    });
  }

  /**
   * `entry`'s digest with `cover`, cut to the bytes the entry may use: an active entry's cover counts
   * against the byte bound, and each keeps at most its share of the bound beyond its own bytes.
   */
  #withCover(entry: IndexEntry, cover: GuestCover | undefined): EntryDigest {
    const { cover: _old, ...digest } = entry.digest;
    const kept = cover ? coverWithinShare(this.bounds)(entry, cover) : undefined;
    return kept ? { ...digest, cover: kept } : digest;
  }

  utilisation(): IndexUtilisation {
    return measure(this.#entries, this.bounds);
  }

  overBounds(): string | null {
    return overBounds(this.utilisation());
  }

  /** Puts every active entry without a page on the most similar page with room. */
  placeOnPages(openPageSimilarity: number, options: { readonly unbounded?: boolean } = {}): void {
    const perPage = Math.ceil(this.bounds.entries / this.bounds.pages);
    const members = new Map<number, IndexEntry[]>();
    for (let page = 0; page < this.bounds.pages; page++) members.set(page, []);
    const unplaced: IndexEntry[] = [];
    for (const entry of this.active()) {
      if (entry.page === null) unplaced.push(entry);
      else members.set(entry.page, [...(members.get(entry.page) ?? []), entry]);
    }
    for (const entry of unplaced) {
      // An unbounded index opens pages of the same size as it grows.
      if (options.unbounded && [...members.values()].every((list) => list.length >= perPage)) {
        members.set(members.size, []);
      }
      let best: { page: number; score: number } | null = null;
      for (const [page, list] of members) {
        if (list.length >= perPage) continue;
        const score =
          list.length === 0
            ? openPageSimilarity
            : list.reduce((sum, member) => sum + cosine(entry.vector, member.vector), 0) / list.length;
        if (!best || score > best.score) best = { page, score };
      }
      if (!best) {
        this.warnings.push(`no page has room for entry ${entry.id}: the index is over its entry bound`);
        continue;
      }
      members.get(best.page)?.push(this.put({ ...entry, page: best.page }));
    }
  }
}

/** Similarity used to find candidates: text, averaged with images when both sides have them. */
export function entrySimilarity(
  a: { readonly vector: Float32Array; readonly imageVector: Float32Array | null },
  b: { readonly vector: Float32Array; readonly imageVector: Float32Array | null },
): number {
  const text = cosine(a.vector, b.vector);
  return a.imageVector && b.imageVector ? (text + cosine(a.imageVector, b.imageVector)) / 2 : text;
}

/** Entries are immutable values, so what is derived from one is computed once. */
const bytesOf = new WeakMap<IndexEntry, number>();

/**
 * Cuts a cover to the bytes its entry may use: the entry's share of the byte bound beyond its own
 * bytes (without any cover). Every path that writes a cover (maintenance, forget, repair) cuts it
 * this way, so none can take the index over its byte bound.
 */
export function coverWithinShare(
  bounds: IndexBounds,
): (entry: IndexEntry, cover: GuestCover) => GuestCover | undefined {
  const share = Math.floor(bounds.bytes / bounds.entries);
  return (entry, cover) => {
    const { cover: _old, ...digest } = entry.digest;
    return trimCover(cover, share - entryBytes({ ...entry, digest }));
  };
}

export function entryBytes(entry: IndexEntry): number {
  let bytes = bytesOf.get(entry);
  if (bytes === undefined) {
    bytes =
      Buffer.byteLength(entry.routingText) +
      Buffer.byteLength(JSON.stringify(entry.digest)) +
      entry.vector.byteLength +
      (entry.imageVector?.byteLength ?? 0) +
      entry.pointers.length * pointerBytes;
    bytesOf.set(entry, bytes);
  }
  return bytes;
}

export function measure(entries: ReadonlyMap<string, IndexEntry>, bounds: IndexBounds): IndexUtilisation {
  let count = 0;
  let tokens = 0;
  let bytes = 0;
  const pages = new Set<number>();
  const pointers = new Set<string>();
  const inactive = { superseded: 0, merged: 0, overflow: 0 };
  for (const entry of entries.values()) {
    for (const pointer of entry.pointers) pointers.add(pointer);
    if (entry.status !== "active") {
      inactive[entry.status]++;
      continue;
    }
    count++;
    tokens += entry.tokens;
    bytes += entryBytes(entry);
    if (entry.page !== null) pages.add(entry.page);
  }
  const utilisation = Math.max(
    count / bounds.entries,
    pages.size / bounds.pages,
    tokens / bounds.tokens,
    bytes / bounds.bytes,
  );
  return {
    entries: count,
    pages: pages.size,
    tokens,
    bytes,
    bounds,
    utilisation: roundForRecord(utilisation),
    pointers: pointers.size,
    inactive,
  };
}

export function overBounds(use: IndexUtilisation): string | null {
  if (use.entries > use.bounds.entries) return "entries";
  if (use.tokens > use.bounds.tokens) return "tokens";
  if (use.bytes > use.bounds.bytes) return "bytes";
  if (use.pages > use.bounds.pages) return "pages";
  return null;
}
