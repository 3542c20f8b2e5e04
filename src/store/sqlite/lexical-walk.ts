import type { Database } from "better-sqlite3";
import type { LexicalTables } from "./lexical-index.ts";
import { blockBound, decodePostings, idfFloor, type PostingArrays, saturation } from "./lexical-postings.ts";
import { statement } from "./statements.ts";

/**
 * The exact top k of FTS5's BM25 over Cairn's own index (decision 030): block-max MaxScore.
 *
 * Each term's list is split into blocks that carry their largest tf and smallest document length,
 * so `idf × saturation(maxTf, minLength)` bounds every posting of a block. With θ the k-th best
 * score so far:
 * - MaxScore: the terms whose list-wide bounds sum (with the scope token's) to at most θ are
 *   non-essential; a document holding none of the others cannot enter the top k, so candidates
 *   come from the essential lists alone and non-essential lists are only probed, while the
 *   partial score plus what the rest could add still beats θ.
 * - Block-max: at a candidate, the bounds of the blocks that cover it, summed over every term,
 *   bound every document up to the nearest block end; when that is not above θ, the whole range
 *   is skipped without reading those blocks from the database.
 *
 * Scores are computed as FTS5 computes them (same idf, same length normalisation, the scope token's
 * term included when FTS5's query has it), so the result is the exhaustive ranking's up to the
 * order of equal scores (and which of several tied at the cut is kept).
 */
export interface LexicalWalk {
  readonly db: Database;
  readonly tables: LexicalTables;
  readonly scopeKey: string;
  /** Whether FTS5's query ANDs the scope token in (other scopes share the table): its bm25 term counts then. */
  readonly scopeTokenScored: boolean;
  readonly limit: number;
  /** Whether a document passes the search's filters; asked only of documents that would enter the top k. */
  readonly accept?: (rowid: number) => boolean;
}

/** What one walk did, for tests and benchmarks. */
export interface WalkTrace {
  /** Blocks whose postings were read and decoded, of `blocks` in the query's lists. */
  decoded: number;
  blocks: number;
  /** Documents whose score was computed in full. */
  scored: number;
}

interface TermList {
  readonly id: number;
  readonly token: string;
  readonly idf: number;
  /** idf × the number of query phrases standing for this term. */
  readonly weight: number;
  readonly lastDocs: number[];
  readonly bounds: number[];
  /** The tail's bytes when it holds postings (then the last "block"); sealed blocks are read when first needed. */
  readonly tail: Uint8Array | null;
  readonly upper: number;
}

class Cursor {
  readonly list: TermList;
  block = 0;
  position = 0;
  current = 0;
  #decoded: PostingArrays | null = null;
  readonly #fetch: (list: TermList, block: number) => Uint8Array;

  constructor(list: TermList, fetch: (list: TermList, block: number) => Uint8Array) {
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

  postings(): PostingArrays {
    if (!this.#decoded) {
      this.#decoded = decodePostings(this.#fetch(this.list, this.block));
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

/** One phrase's term of FTS5's bm25, in FTS5's order of operations (`fts5_aux.c`): idf · (tf(k1 + 1) / (…)). */
function fts5Term(termIdf: number, tf: number, length: number, averageLength: number): number {
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
    // "Below" in this heap: a lower score, or an equal one with a higher rowid. FTS5 orders equal
    // scores by rowid, so of documents tied at the cut the highest rowids are the ones left out.
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

/**
 * The top `limit` rows of the scope for the query's tokens (one per FTS5 phrase, repeats allowed),
 * as (rowid, score) best first.
 */
export function walkTopK(
  walk: LexicalWalk,
  tokens: readonly string[],
  trace?: WalkTrace,
): { rowid: number; score: number }[] {
  const { db, tables } = walk;
  if (walk.limit <= 0 || tokens.length === 0) return [];
  const total = statement(db, `SELECT docs, tokens FROM ${tables.scopes} WHERE ord = 0`, "raw").get() as
    | [number, number]
    | undefined;
  const scope = statement(db, `SELECT ord, docs FROM ${tables.scopes} WHERE scope_key = ?`, "raw").get(walk.scopeKey) as
    | [number, number]
    | undefined;
  if (!total || !scope || total[0] === 0) return [];
  const [rows, totalLength] = total;
  const [scopeOrdinal, scopeDocs] = scope;
  const averageLength = totalLength / rows;
  const scopeIdf = walk.scopeTokenScored ? sqliteIdf(db, rows, scopeDocs) : 0;
  // The scope token's term at its largest: tf 1 in the shortest possible document.
  const scopeUpper = walk.scopeTokenScored ? scopeIdf * saturation(1, 0, averageLength) * slack : 0;

  const lists = termLists(walk, tokens, rows, averageLength);
  if (trace)
    Object.assign(trace, { decoded: 0, blocks: lists.reduce((sum, list) => sum + list.lastDocs.length, 0), scored: 0 });
  if (lists.length === 0) return [];
  // A block is read with the next few of its list in one range query: a point query per block cost
  // ~15 µs (most of the walk), a row of a range ~1 µs, and a walk that needs a block mostly needs
  // its neighbours too.
  const fetchBlocks = statement(
    db,
    `SELECT postings FROM ${tables.blocks} WHERE term_id = ? AND last_doc >= ? ORDER BY last_doc LIMIT ${readAhead}`,
    "pluck",
  );
  const fetched = new Map<TermList, Uint8Array[]>();
  const fetch = (list: TermList, block: number): Uint8Array => {
    if (trace) trace.decoded++;
    if (list.tail && block === list.lastDocs.length - 1) return list.tail;
    let blocks = fetched.get(list);
    if (!blocks) {
      blocks = [];
      fetched.set(list, blocks);
    }
    const kept = blocks[block];
    if (kept) return kept;
    const rows = fetchBlocks.all(list.id, list.lastDocs[block]) as Uint8Array[];
    rows.forEach((bytes, offset) => {
      blocks[block + offset] = bytes;
    });
    return rows[0] as Uint8Array;
  };
  // Ascending by list-wide bound: non-essential lists are always a prefix.
  const cursors = lists.sort((a, b) => a.upper - b.upper).map((list) => new Cursor(list, fetch));
  const prefix = [0];
  for (const cursor of cursors) prefix.push((prefix.at(-1) as number) + cursor.list.upper);
  const byToken = new Map(cursors.map((cursor) => [cursor.list.token, cursor]));
  const byPhrase = tokens.map((token) => byToken.get(token) ?? null);
  const top = new TopK(walk.limit);
  let firstEssential = 0;
  const resplit = () => {
    const threshold = top.threshold;
    while (firstEssential < cursors.length && (prefix[firstEssential + 1] as number) + scopeUpper <= threshold) {
      firstEssential++;
    }
  };
  for (const cursor of cursors) cursor.seek(0);

  for (;;) {
    let candidate = Number.POSITIVE_INFINITY;
    for (let index = firstEssential; index < cursors.length; index++) {
      const doc = (cursors[index] as Cursor).current;
      if (doc < candidate) candidate = doc;
    }
    if (candidate === Number.POSITIVE_INFINITY) break;
    const threshold = top.threshold;
    // Block-max: what any document from here to the nearest block end could score.
    let blockUpper = scopeUpper;
    let upTo = Number.POSITIVE_INFINITY;
    for (const cursor of cursors) {
      cursor.shallow(candidate);
      blockUpper += cursor.bound();
      const last = cursor.lastDoc();
      if (last < upTo) upTo = last;
    }
    if (blockUpper <= threshold) {
      for (let index = firstEssential; index < cursors.length; index++) {
        const cursor = cursors[index] as Cursor;
        if (cursor.current <= upTo) cursor.seek(upTo + 1);
      }
      continue;
    }
    let score = 0;
    let ours = true;
    let length = 0;
    for (let index = firstEssential; index < cursors.length; index++) {
      const cursor = cursors[index] as Cursor;
      if (cursor.current !== candidate) continue;
      const postings = cursor.postings();
      if ((postings.scopes[cursor.position] as number) !== scopeOrdinal) {
        ours = false;
        break;
      }
      length = postings.lengths[cursor.position] as number;
      score += cursor.contribution(averageLength);
    }
    if (ours) {
      let rest = 0;
      for (let index = 0; index < firstEssential; index++) rest += (cursors[index] as Cursor).bound();
      for (let index = firstEssential - 1; index >= 0; index--) {
        if ((score + rest + scopeUpper) * slack <= threshold) break;
        const cursor = cursors[index] as Cursor;
        rest -= cursor.bound();
        if (cursor.seek(candidate) === candidate) score += cursor.contribution(averageLength);
      }
      // With slack: this partial sum is not added up in FTS5's order, the score computed next is.
      if ((score + rest + scopeUpper) * slack > threshold) {
        if (trace) trace.scored++;
        // Every list now sits at or past the candidate: the score again, in FTS5's order of phrases and
        // of operations, so documents FTS5 ties stay tied (and the same one is kept at the cut).
        score = walk.scopeTokenScored ? fts5Term(scopeIdf, 1, length, averageLength) : 0;
        for (const cursor of byPhrase) {
          if (cursor && cursor.current === candidate) {
            const postings = cursor.postings();
            score += fts5Term(cursor.list.idf, postings.tfs[cursor.position] as number, length, averageLength);
          }
        }
        if (score > threshold && (walk.accept?.(candidate) ?? true)) {
          top.push(score, candidate);
          resplit();
        }
      }
    }
    for (let index = firstEssential; index < cursors.length; index++) {
      const cursor = cursors[index] as Cursor;
      if (cursor.current === candidate) cursor.next();
    }
    // Lists that just became non-essential may sit behind the candidate: they are probed by seek.
  }
  return top.sorted();
}

/**
 * FTS5's idf with SQLite's own logarithm (the C library's, which FTS5 calls): V8's `Math.log` can
 * differ from it in the last bit, and FTS5's equal scores would then stop being equal here.
 */
function sqliteIdf(db: Database, rows: number, documents: number): number {
  const value = statement(db, "SELECT ln((? - ? + 0.5) / (? + 0.5))", "pluck").get(
    rows,
    documents,
    documents,
  ) as number;
  return idfFloor(value);
}

/**
 * Bounds are raised by a relative 1e-12: a bound and the score it bounds are computed in different
 * orders of operations, and a document reaching its bound exactly must not lose it to rounding.
 */
const slack = 1 + 1e-12;

/** Sealed blocks read per query to the database (see `fetch`): a cost switch, not a result one. */
const readAhead = 32;

/** The query's terms found in the dictionary, with their blocks' bounds (the tail as the last block). */
function termLists(walk: LexicalWalk, tokens: readonly string[], rows: number, averageLength: number): TermList[] {
  const { db, tables } = walk;
  const multiplicity = new Map<string, number>();
  for (const token of tokens) multiplicity.set(token, (multiplicity.get(token) ?? 0) + 1);
  const readTerm = statement(
    db,
    `SELECT id, df, last_doc, tail, tail_max_tf, tail_min_len, tail_n FROM ${tables.terms} WHERE term = ?`,
    "raw",
  );
  const readBlocks = statement(
    db,
    `SELECT last_doc, max_tf, min_len FROM ${tables.blocks} WHERE term_id = ? ORDER BY last_doc`,
    "raw",
  );
  const lists: TermList[] = [];
  for (const [token, count] of multiplicity) {
    const row = readTerm.get(token) as [number, number, number, Uint8Array, number, number, number] | undefined;
    if (!row) continue;
    const [id, df, lastDoc, tail, tailMaxTf, tailMinLength, tailCount] = row;
    const termIdf = sqliteIdf(db, rows, df);
    const weight = termIdf * count;
    const lastDocs: number[] = [];
    const bounds: number[] = [];
    let upper = 0;
    for (const [blockLast, maxTf, minLength] of readBlocks.all(id) as [number, number, number][]) {
      const bound = weight * blockBound(maxTf, minLength, averageLength) * slack;
      lastDocs.push(blockLast);
      bounds.push(bound);
      if (bound > upper) upper = bound;
    }
    // The tail is the last block when it holds postings (a write leaves it empty when it seals it).
    if (tailCount > 0) {
      const bound = weight * blockBound(tailMaxTf, tailMinLength, averageLength) * slack;
      lastDocs.push(lastDoc);
      bounds.push(bound);
      if (bound > upper) upper = bound;
    }
    lists.push({ id, token, idf: termIdf, weight, lastDocs, bounds, tail: tailCount > 0 ? tail : null, upper });
  }
  return lists;
}
