/**
 * The exact top k of BM25 over block-packed postings, by block-max MaxScore: the storage-neutral
 * part of a lexical pass (decision 030 for SQLite, 034 for Postgres). A store supplies the query's
 * lists — per list its blocks' last rowids and score bounds — and a way to read a block's postings
 * (SQLite reads them lazily, a range at a time; Postgres hands over blocks it fetched with the
 * lists). Pure arithmetic, no database.
 *
 * Each list is split into blocks that carry their largest tf and smallest document length, so
 * `weight × saturation(maxTf, minLength)` bounds every posting of a block. With θ the k-th best
 * score so far:
 * - MaxScore: the lists whose list-wide bounds sum (with the fixed term's) to at most θ are
 *   non-essential; a document holding none of the others cannot enter the top k, so candidates
 *   come from the essential lists alone and non-essential lists are only probed, while the
 *   partial score plus what the rest could add still beats θ.
 * - Block-max: at a candidate, the bounds of the blocks that cover it, summed over every list,
 *   bound every document up to the nearest block end; when that is not above θ, the whole range
 *   is skipped without reading those blocks.
 */

/** BM25's parameters (FTS5's built-in `rank`, and the Postgres store's). */
export const k1 = 1.2;
export const b = 0.75;

/** Decoded postings of one block, struct of arrays, docs ascending. */
export interface BlockPostings {
  readonly docs: readonly number[];
  readonly tfs: readonly number[];
  readonly lengths: readonly number[];
  /** The scope ordinal of each posting, where a list holds several scopes' postings (SQLite). */
  readonly scopes?: readonly number[];
}

/** BM25 gives a term in at least half the documents an idf of 1e-6 instead of a non-positive one. */
export function idfFloor(logarithm: number): number {
  return logarithm <= 0 ? 1e-6 : logarithm;
}

/**
 * One term of BM25 for a document, without its idf, in FTS5's own order of operations
 * (`fts5_aux.c`): tf(k1 + 1) / (tf + k1(1 − b + b·D / avgdl)).
 */
export function saturation(tf: number, length: number, averageLength: number): number {
  return (tf * (k1 + 1.0)) / (tf + k1 * (1 - b + (b * length) / averageLength));
}

/**
 * The most `saturation` can be for any posting of a block: it grows with tf and falls with length,
 * so the block's largest tf and smallest length bound every posting in it, whatever avgdl is now.
 */
export function blockBound(maxTf: number, minLength: number, averageLength: number): number {
  return saturation(maxTf, minLength, averageLength);
}

/**
 * Bounds are raised by a relative 1e-12: a bound and the score it bounds are computed in different
 * orders of operations, and a document reaching its bound exactly must not lose it to rounding.
 */
export const slack = 1 + 1e-12;

/** One query term's list: its blocks' last rowids and bounds (with slack), ascending. */
export interface BlockList {
  readonly token: string;
  readonly idf: number;
  /** idf × the number of query phrases standing for this term. */
  readonly weight: number;
  readonly lastDocs: readonly number[];
  readonly bounds: readonly number[];
  /** The largest of `bounds`. */
  readonly upper: number;
}

export interface BlockMaxQuery<L extends BlockList> {
  readonly lists: readonly L[];
  /** The query's terms in scoring order, one per phrase (repeats allowed): a final score sums in this order. */
  readonly phrases: readonly string[];
  readonly limit: number;
  readonly averageLength: number;
  /** A block's postings (called at most once per block and cursor position change). */
  readonly fetch: (list: L, block: number) => BlockPostings;
  /**
   * A term every document of the scope carries (SQLite's scope token when FTS5 ANDs it in): its
   * bound, and its exact value for a document of this length. None by default.
   */
  readonly fixed?: { readonly upper: number; readonly score: (length: number) => number };
  /** Postings of other scopes share the lists: only this ordinal's count. */
  readonly scope?: number;
  /** Whether a document passes the search's filters; asked only of documents that would enter the top k. */
  readonly accept?: (rowid: number) => boolean;
}

/** What one walk did, for tests and benchmarks. */
export interface BlockMaxTrace {
  /** Documents whose score was computed in full. */
  scored: number;
}

class Cursor<L extends BlockList> {
  readonly list: L;
  block = 0;
  position = 0;
  current = 0;
  #decoded: BlockPostings | null = null;
  readonly #fetch: (list: L, block: number) => BlockPostings;

  constructor(list: L, fetch: (list: L, block: number) => BlockPostings) {
    this.list = list;
    this.#fetch = fetch;
  }

  get exhausted(): boolean {
    return this.block >= this.list.lastDocs.length;
  }

  /** Moves to the first block that can hold `target` or a later rowid, without reading it. */
  shallow(target: number): void {
    const { lastDocs } = this.list;
    let block = this.block;
    while (block < lastDocs.length && (lastDocs[block] as number) < target) block++;
    if (block !== this.block) {
      this.block = block;
      this.#decoded = null;
      this.position = 0;
    }
  }

  bound(): number {
    return this.exhausted ? 0 : (this.list.bounds[this.block] as number);
  }

  lastDoc(): number {
    return this.exhausted ? Number.POSITIVE_INFINITY : (this.list.lastDocs[this.block] as number);
  }

  /** The first posting at or after `target`; its rowid (∞ when the list is done). */
  seek(target: number): number {
    this.shallow(target);
    if (this.exhausted) {
      this.current = Number.POSITIVE_INFINITY;
      return this.current;
    }
    const postings = this.postings();
    while ((postings.docs[this.position] as number) < target) this.position++;
    this.current = postings.docs[this.position] as number;
    return this.current;
  }

  /** The posting after the current one. */
  next(): number {
    return this.seek(this.current + 1);
  }

  postings(): BlockPostings {
    if (!this.#decoded) {
      this.#decoded = this.#fetch(this.list, this.block);
      this.position = 0;
    }
    return this.#decoded;
  }

  contribution(averageLength: number): number {
    const postings = this.postings();
    return (
      this.list.weight *
      saturation(postings.tfs[this.position] as number, postings.lengths[this.position] as number, averageLength)
    );
  }
}

/** One phrase's term of BM25, in FTS5's order of operations: idf · (tf(k1 + 1) / (…)). */
export function bm25Term(termIdf: number, tf: number, length: number, averageLength: number): number {
  return termIdf * saturation(tf, length, averageLength);
}

/** A min-heap of the best `limit` (score, rowid) pairs. */
class TopK {
  readonly #scores: number[] = [];
  readonly #docs: number[] = [];
  readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  get threshold(): number {
    return this.#scores.length < this.limit ? Number.NEGATIVE_INFINITY : (this.#scores[0] as number);
  }

  push(score: number, doc: number): void {
    const scores = this.#scores;
    const docs = this.#docs;
    // "Below" in this heap: a lower score, or an equal one with a higher rowid. Equal scores are
    // ordered by rowid, so of documents tied at the cut the highest rowids are the ones left out.
    const below = (aScore: number, aDoc: number, bScore: number, bDoc: number) =>
      aScore < bScore || (aScore === bScore && aDoc > bDoc);
    let at: number;
    if (scores.length < this.limit) {
      at = scores.length;
      scores.push(score);
      docs.push(doc);
      while (at > 0) {
        const parent = (at - 1) >> 1;
        if (!below(score, doc, scores[parent] as number, docs[parent] as number)) break;
        scores[at] = scores[parent] as number;
        docs[at] = docs[parent] as number;
        at = parent;
      }
    } else {
      at = 0;
      for (;;) {
        const left = 2 * at + 1;
        if (left >= scores.length) break;
        const right = left + 1;
        const child =
          right < scores.length &&
          below(scores[right] as number, docs[right] as number, scores[left] as number, docs[left] as number)
            ? right
            : left;
        if (!below(scores[child] as number, docs[child] as number, score, doc)) break;
        scores[at] = scores[child] as number;
        docs[at] = docs[child] as number;
        at = child;
      }
    }
    scores[at] = score;
    docs[at] = doc;
  }

  sorted(): { rowid: number; score: number }[] {
    return this.#scores
      .map((score, index) => ({ rowid: this.#docs[index] as number, score }))
      .sort((a, b) => b.score - a.score || a.rowid - b.rowid);
  }
}

/** The top `limit` documents of the lists, as (rowid, score) best first; ties by rowid. */
export function blockMaxTopK<L extends BlockList>(
  query: BlockMaxQuery<L>,
  trace?: BlockMaxTrace,
): { rowid: number; score: number }[] {
  const { averageLength, scope } = query;
  if (query.limit <= 0 || query.lists.length === 0) return [];
  const fixedUpper = query.fixed?.upper ?? 0;
  // Ascending by list-wide bound: non-essential lists are always a prefix.
  const cursors = [...query.lists].sort((a, b) => a.upper - b.upper).map((list) => new Cursor(list, query.fetch));
  const prefix = [0];
  for (const cursor of cursors) prefix.push((prefix.at(-1) as number) + cursor.list.upper);
  const byToken = new Map(cursors.map((cursor) => [cursor.list.token, cursor]));
  const byPhrase = query.phrases.map((token) => byToken.get(token) ?? null);
  const top = new TopK(query.limit);
  let firstEssential = 0;
  const resplit = () => {
    const threshold = top.threshold;
    while (firstEssential < cursors.length && (prefix[firstEssential + 1] as number) + fixedUpper <= threshold) {
      firstEssential++;
    }
  };
  for (const cursor of cursors) cursor.seek(0);

  for (;;) {
    let candidate = Number.POSITIVE_INFINITY;
    for (let index = firstEssential; index < cursors.length; index++) {
      const doc = (cursors[index] as Cursor<L>).current;
      if (doc < candidate) candidate = doc;
    }
    if (candidate === Number.POSITIVE_INFINITY) break;
    const threshold = top.threshold;
    // Block-max: what any document from here to the nearest block end could score.
    let blockUpper = fixedUpper;
    let upTo = Number.POSITIVE_INFINITY;
    for (const cursor of cursors) {
      cursor.shallow(candidate);
      blockUpper += cursor.bound();
      const last = cursor.lastDoc();
      if (last < upTo) upTo = last;
    }
    if (blockUpper <= threshold) {
      for (let index = firstEssential; index < cursors.length; index++) {
        const cursor = cursors[index] as Cursor<L>;
        if (cursor.current <= upTo) cursor.seek(upTo + 1);
      }
      continue;
    }
    let score = 0;
    let ours = true;
    let length = 0;
    for (let index = firstEssential; index < cursors.length; index++) {
      const cursor = cursors[index] as Cursor<L>;
      if (cursor.current !== candidate) continue;
      const postings = cursor.postings();
      if (scope !== undefined && (postings.scopes?.[cursor.position] as number) !== scope) {
        ours = false;
        break;
      }
      length = postings.lengths[cursor.position] as number;
      score += cursor.contribution(averageLength);
    }
    if (ours) {
      let rest = 0;
      for (let index = 0; index < firstEssential; index++) rest += (cursors[index] as Cursor<L>).bound();
      for (let index = firstEssential - 1; index >= 0; index--) {
        if ((score + rest + fixedUpper) * slack <= threshold) break;
        const cursor = cursors[index] as Cursor<L>;
        rest -= cursor.bound();
        if (cursor.seek(candidate) === candidate) score += cursor.contribution(averageLength);
      }
      // With slack: this partial sum is not added up in phrase order, the score computed next is.
      if ((score + rest + fixedUpper) * slack > threshold) {
        if (trace) trace.scored++;
        // Every list now sits at or past the candidate: the score again, in phrase order and in
        // FTS5's order of operations, so documents the exhaustive ranking ties stay tied.
        score = query.fixed ? query.fixed.score(length) : 0;
        for (const cursor of byPhrase) {
          if (cursor && cursor.current === candidate) {
            const postings = cursor.postings();
            score += bm25Term(cursor.list.idf, postings.tfs[cursor.position] as number, length, averageLength);
          }
        }
        if (score > threshold && (query.accept?.(candidate) ?? true)) {
          top.push(score, candidate);
          resplit();
        }
      }
    }
    for (let index = firstEssential; index < cursors.length; index++) {
      const cursor = cursors[index] as Cursor<L>;
      if (cursor.current === candidate) cursor.next();
    }
    // Lists that just became non-essential may sit behind the candidate: they are probed by seek.
  }
  return top.sorted();
}
