import type { Database } from "better-sqlite3";
import {
  type BlockList,
  type BlockMaxTrace,
  blockBound,
  blockMaxTopK,
  bm25Term,
  idfFloor,
  saturation,
  slack,
} from "../lexical-block-max.ts";
import type { LexicalTables } from "./lexical-index.ts";
import { decodePostings } from "./lexical-postings.ts";
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

interface TermList extends BlockList {
  readonly id: number;
  /** This term's sealed blocks' postings read so far, by block (shared through the connection's `BlockCache`). */
  readonly kept: (Uint8Array | undefined)[];
  /** The tail's bytes when it holds postings (then the last "block"); sealed blocks are read when first needed. */
  readonly tail: Uint8Array | null;
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

  const cache = blockCache(db);
  const lists = termLists(walk, cache, tokens, rows, averageLength);
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
  const fetch = (list: TermList, block: number): Uint8Array => {
    if (trace) trace.decoded++;
    if (list.tail && block === list.lastDocs.length - 1) return list.tail;
    const kept = list.kept[block];
    if (kept) return kept;
    const rows = fetchBlocks.all(list.id, list.lastDocs[block]) as Uint8Array[];
    rows.forEach((bytes, offset) => {
      if (list.kept[block + offset]) return;
      list.kept[block + offset] = bytes;
      cache.postingBytes += bytes.byteLength;
    });
    if (cache.postingBytes > maxCachedPostingBytes) {
      // Past the bound the connection starts afresh; this walk's lists keep what they hold until it ends.
      cache.postings.clear();
      cache.postingBytes = 0;
    }
    return rows[0] as Uint8Array;
  };
  const walked: BlockMaxTrace = { scored: 0 };
  const hits = blockMaxTopK(
    {
      lists,
      phrases: tokens,
      limit: walk.limit,
      averageLength,
      fetch: (list, block) => decodePostings(fetch(list, block)),
      ...(walk.scopeTokenScored
        ? { fixed: { upper: scopeUpper, score: (length: number) => bm25Term(scopeIdf, 1, length, averageLength) } }
        : {}),
      scope: scopeOrdinal,
      ...(walk.accept ? { accept: walk.accept } : {}),
    },
    walked,
  );
  if (trace) trace.scored = walked.scored;
  return hits;
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

/** Sealed blocks read per query to the database (see `fetch`): a cost switch, not a result one. */
const readAhead = 32;

/** A term's sealed blocks as the blocks table holds them: each block's last rowid, largest tf, shortest document. */
interface SealedBlocks {
  readonly lastDocs: readonly number[];
  readonly maxTfs: readonly number[];
  readonly minLengths: readonly number[];
}

/**
 * What the walk read from the blocks table, kept per connection while the database is unchanged:
 * each term's sealed block bounds (reading every block row of a common term each query grew with the
 * corpus: 5.8% of a default search's CPU at 1M raw nodes) and the postings of the blocks it decoded
 * (common terms' blocks are read again by the next query that holds them: the range reads were 14%
 * of that CPU). Everything is dropped once anything was written: by another connection (SQLite's
 * `data_version`) or by this one (`total_changes()`, every row this connection changed; the
 * tokenizer has its own connection, `lexical-tokens.ts`). Bounds are cleared when a million blocks
 * are held, postings past `maxCachedPostingBytes`.
 */
interface BlockCache {
  readonly stamp: string;
  blocks: number;
  readonly terms: Map<string, SealedBlocks>;
  postingBytes: number;
  /** Each term's sealed blocks' postings read so far, by `table:term`, then by block. */
  readonly postings: Map<string, (Uint8Array | undefined)[]>;
}

const blockCaches = new WeakMap<Database, BlockCache>();
const maxCachedBlocks = 1_000_000;
/** Per connection (the store's own and each read worker's): ~20 million postings at ~3 bytes each. */
const maxCachedPostingBytes = 64 * 1024 * 1024;

function blockCache(db: Database): BlockCache {
  const [version, changes] = statement(
    db,
    "SELECT data_version, total_changes() FROM pragma_data_version",
    "raw",
  ).get() as [number, number];
  const stamp = `${version}:${changes}`;
  let cache = blockCaches.get(db);
  if (!cache || cache.stamp !== stamp) {
    cache = { stamp, blocks: 0, terms: new Map(), postingBytes: 0, postings: new Map() };
    blockCaches.set(db, cache);
  }
  return cache;
}

function sealedBlocks(walk: LexicalWalk, cache: BlockCache, termId: number): SealedBlocks {
  const key = `${walk.tables.blocks}:${termId}`;
  const kept = cache.terms.get(key);
  if (kept) return kept;
  const rows = statement(
    walk.db,
    `SELECT last_doc, max_tf, min_len FROM ${walk.tables.blocks} WHERE term_id = ? ORDER BY last_doc`,
    "raw",
  ).all(termId) as [number, number, number][];
  const blocks: SealedBlocks = {
    lastDocs: rows.map((row) => row[0]),
    maxTfs: rows.map((row) => row[1]),
    minLengths: rows.map((row) => row[2]),
  };
  if (cache.blocks + rows.length > maxCachedBlocks) {
    cache.terms.clear();
    cache.blocks = 0;
  }
  cache.terms.set(key, blocks);
  cache.blocks += rows.length;
  return blocks;
}

/** The query's terms found in the dictionary, with their blocks' bounds (the tail as the last block). */
function termLists(
  walk: LexicalWalk,
  cache: BlockCache,
  tokens: readonly string[],
  rows: number,
  averageLength: number,
): TermList[] {
  const { db, tables } = walk;
  const multiplicity = new Map<string, number>();
  for (const token of tokens) multiplicity.set(token, (multiplicity.get(token) ?? 0) + 1);
  const readTerm = statement(
    db,
    `SELECT id, df, last_doc, tail, tail_max_tf, tail_min_len, tail_n FROM ${tables.terms} WHERE term = ?`,
    "raw",
  );
  const lists: TermList[] = [];
  for (const [token, count] of multiplicity) {
    const row = readTerm.get(token) as [number, number, number, Uint8Array, number, number, number] | undefined;
    if (!row) continue;
    const [id, df, lastDoc, tail, tailMaxTf, tailMinLength, tailCount] = row;
    const termIdf = sqliteIdf(db, rows, df);
    const weight = termIdf * count;
    const sealed = sealedBlocks(walk, cache, id);
    const lastDocs = [...sealed.lastDocs];
    const bounds: number[] = [];
    let upper = 0;
    for (let block = 0; block < lastDocs.length; block++) {
      const bound =
        weight * blockBound(sealed.maxTfs[block] as number, sealed.minLengths[block] as number, averageLength) * slack;
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
    const key = `${tables.blocks}:${id}`;
    let kept = cache.postings.get(key);
    if (!kept) {
      kept = [];
      cache.postings.set(key, kept);
    }
    lists.push({ id, token, idf: termIdf, weight, lastDocs, bounds, tail: tailCount > 0 ? tail : null, upper, kept });
  }
  return lists;
}
