import { contentWords } from "../core/text.ts";
import { mergeMeans, vectorBytes } from "../core/vectors.ts";
import { coverVector, type GuestCover, type IndexEntry } from "../store/index-records.ts";

/**
 * Guest covers (decision 029): an entry that reaches others through its links (overflow fallbacks it
 * hosts, the earlier state it replaced, and what those reach in turn) carries the terms of what it
 * reaches, so a query about an overflowed segment finds the host that leads to it. Routing text
 * describes only the entry itself; without a cover, a segment pushed out of the active bounds was
 * reachable in principle but never chosen, because nothing in its host mentioned it.
 *
 * A cover is a pure function of the index (no query, no model), recomputed for the entries whose
 * reach changed whenever maintenance or a forget changes the index, so a forgotten turn's words
 * leave every cover with it. Its size is bounded by `maxCoverTerms`.
 */

/**
 * Terms a cover keeps: three entries' worth of digest keywords (32 each); at 36 active entries
 * about 36 × 96 short words, well inside the active index's byte bound. Chosen as a bound, not fitted.
 */
export const maxCoverTerms = 96;

/** The entries `entry` reaches directly through its links: overflow guests it hosts, and its earlier state. */
function reachedBy(entries: ReadonlyMap<string, IndexEntry>): Map<string, string[]> {
  const reached = new Map<string, string[]>();
  const add = (from: string, to: string) => reached.set(from, [...(reached.get(from) ?? []), to]);
  for (const entry of entries.values()) {
    if (entry.status === "overflow" && entry.host && entries.has(entry.host)) add(entry.host, entry.id);
    if (entry.predecessor && entries.has(entry.predecessor)) add(entry.id, entry.predecessor);
  }
  return reached;
}

/** The entries whose cover depends on `id`: its host, and the later states that name it as predecessor. */
function reachersOf(entries: ReadonlyMap<string, IndexEntry>): Map<string, string[]> {
  const reachers = new Map<string, string[]>();
  for (const [from, list] of reachedBy(entries)) {
    for (const to of list) reachers.set(to, [...(reachers.get(to) ?? []), from]);
  }
  return reachers;
}

/** An entry's own terms: its digest's keywords and the words of its entities, with counts. */
function ownTerms(entry: IndexEntry): Record<string, number> {
  const terms: Record<string, number> = { ...entry.digest.keywords };
  for (const [entity, count] of Object.entries(entry.digest.entities)) {
    for (const word of contentWords(entity)) terms[word] = (terms[word] ?? 0) + count;
  }
  return terms;
}

function capTerms(terms: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(terms)
      .sort(([wordA, a], [wordB, b]) => b - a || (wordA < wordB ? -1 : 1))
      .slice(0, maxCoverTerms),
  );
}

/**
 * Two covers as one: counts add, vectors average by weight, the cap holds. Either may be absent.
 * Vectors of different lengths (another embedding space) are not mixed: the first one stays.
 */
export function mergeCovers(a: GuestCover | undefined, b: GuestCover | undefined): GuestCover | undefined {
  if (!a) return b;
  if (!b) return a;
  const terms: Record<string, number> = { ...a.terms };
  for (const [term, n] of Object.entries(b.terms)) terms[term] = (terms[term] ?? 0) + n;
  const va = coverVector(a);
  const vb = coverVector(b);
  const wa = a.vectorWeight ?? 0;
  const wb = b.vectorWeight ?? 0;
  const vector = va && vb && va.length !== vb.length ? va : mergeMeans(va, wa, vb, wb);
  const weight = va && vb && va.length !== vb.length ? wa : wa + wb;
  return {
    terms: capTerms(terms),
    entries: a.entries + b.entries,
    ...(vector ? { vector: encodeVector(vector), vectorWeight: weight } : {}),
  };
}

/** The cover of `entry` alone, with what it covers in turn: what a host gains when it comes to reach it. */
export function coverOfReached(entry: IndexEntry): GuestCover {
  const own: GuestCover = {
    terms: capTerms(ownTerms(entry)),
    entries: 1,
    vector: encodeVector(entry.vector),
    vectorWeight: entry.vectorWeight,
  };
  return mergeCovers(own, entry.digest.cover) ?? own;
}

function encodeVector(vector: Float32Array): string {
  return Buffer.from(vectorBytes(vector)).toString("base64");
}

function sameCover(a: GuestCover | undefined, b: GuestCover | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/**
 * Recomputes the covers that `touched` entries can change (theirs and those of every entry that
 * reaches them, in `entries` and, when given, in the index `before` the change), in place in
 * `entries`. Returns the ids whose cover changed, in no particular order.
 */
export function refreshCovers(
  entries: Map<string, IndexEntry>,
  touched: Iterable<string>,
  before?: ReadonlyMap<string, IndexEntry>,
  fit: (entry: IndexEntry, cover: GuestCover) => GuestCover | undefined = (_, cover) => cover,
): string[] {
  const reached = reachedBy(entries);
  const reachers = [reachersOf(entries), ...(before ? [reachersOf(before)] : [])];
  const dirty = new Set<string>();
  const stack = [...touched];
  while (stack.length > 0) {
    const id = stack.pop() as string;
    if (dirty.has(id)) continue;
    dirty.add(id);
    for (const map of reachers) stack.push(...(map.get(id) ?? []));
  }
  const computed = new Map<string, GuestCover | undefined>();
  const visiting = new Set<string>();
  const coverOf = (id: string): GuestCover | undefined => {
    const entry = entries.get(id);
    if (!entry) return undefined;
    if (!dirty.has(id)) return entry.digest.cover;
    if (computed.has(id)) return computed.get(id);
    // Links form no cycle in a sound index; a damaged one must not loop here.
    if (visiting.has(id)) return undefined;
    visiting.add(id);
    let cover: GuestCover | undefined;
    for (const childId of reached.get(id) ?? []) {
      const child = entries.get(childId);
      if (!child) continue;
      const childCover = coverOf(childId);
      const { cover: _stored, ...digest } = child.digest;
      cover = mergeCovers(
        cover,
        coverOfReached({ ...child, digest: childCover ? { ...digest, cover: childCover } : digest }),
      );
    }
    visiting.delete(id);
    // What an entry keeps of its cover may be trimmed (to the bytes it may use); what it passes up is too.
    const kept = cover ? fit(entry, cover) : undefined;
    computed.set(id, kept);
    return kept;
  };
  const changed: string[] = [];
  for (const id of dirty) {
    const entry = entries.get(id);
    if (!entry) continue;
    const cover = coverOf(id);
    if (sameCover(cover, entry.digest.cover)) continue;
    const { cover: _old, ...digest } = entry.digest;
    entries.set(id, { ...entry, digest: cover ? { ...digest, cover } : digest });
    changed.push(id);
  }
  return changed;
}

/**
 * The cover cut to `bytes` of JSON: the vector goes first (it is the larger part), then the least
 * frequent terms; undefined when not even one term fits.
 */
export function trimCover(cover: GuestCover, bytes: number): GuestCover | undefined {
  const size = (candidate: GuestCover) => Buffer.byteLength(JSON.stringify(candidate));
  if (size(cover) <= bytes) return cover;
  const { vector: _vector, vectorWeight: _weight, ...terms } = cover;
  const entries = Object.entries(terms.terms);
  for (let keep = entries.length; keep > 0; keep--) {
    const trimmed = { ...terms, terms: Object.fromEntries(entries.slice(0, keep)) };
    if (size(trimmed) <= bytes) return trimmed;
  }
  return undefined;
}
