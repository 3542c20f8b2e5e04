import type { Database } from "better-sqlite3";
import type { Ranked } from "../../core/ranked.ts";
import type { FilterSql } from "./filter-sql.ts";
import { idf, k1 } from "./lexical-postings.ts";
import { statement } from "./statements.ts";

/**
 * The top `limit` of FTS5's BM25 over an OR of query phrases without ranking every document that
 * matches a common phrase (decision 021): MaxScore over per-phrase upper bounds.
 *
 * FTS5's bm25 is a sum over the expression's phrases of idf(phrase) × tf(k1 + 1) / (tf + k1(1 − b +
 * b·len/avglen)); each term is below idf × (k1 + 1) whatever the document, and idf depends only on
 * the table (its row count and the phrase's document count), not on the expression. So:
 *
 * 1. Count each phrase's documents (FTS5 reads the doclist without ranking anything) and order the
 *    phrases rarest first; R is a prefix of them ("essential"), C the rest.
 * 2. Score only the documents that hold an R phrase, exactly: `R AND (R OR C)` ranks them with every
 *    R phrase counted twice and every C phrase once, and `R` alone ranks them with R once; the
 *    difference is the full query's score (to ~1e-15).
 * 3. A document holding only C phrases scores at most Σ bound(C) (plus the scope token's bound): when
 *    that is below the k-th exact score found, the top k is exact. Otherwise the k-th score found is
 *    a lower bound of the true one: the smallest larger R whose remaining bound falls below it is
 *    scored once more and is then sure to pass; with no such R the query is ranked exhaustively.
 *
 * Results are the exhaustive ranking's, up to the order of equal scores.
 */

/** Slack for the ~1e-15 error of a score obtained as a difference of two ranks. */
const epsilon = 1e-9;
/**
 * Below this many matching documents (summed over phrases) the whole match set is ranked: the
 * extra count and scoring passes would cost more than they save. A cost switch, not a result one.
 */
export const boundedFrom = 2_000;
/**
 * Tables under this many rows are ranked exhaustively without counting: there a query's matches cost
 * ~1 ms to rank and the counting alone (~7% of a ranking) showed as a loss (decision 021).
 */
export const boundedFromRows = 50_000;
/**
 * A round is tried only when it ranks (twice) no more than this share of the documents the exhaustive
 * pass would rank once: the first round may still fail and cost a second round or the exhaustive pass
 * on top; the second is sure to succeed, so it only has to be cheaper than starting over.
 */
const firstRoundShare = 0.4;
const secondRoundShare = 0.8;

export interface LexicalPass {
  readonly db: Database;
  /** The FTS5 table (one per tenant and field). */
  readonly table: string;
  readonly scopeKey: string;
  /** The scope's token phrase, AND-ed in front when the table holds other scopes' rows; else null. */
  readonly scopeToken: string | null;
  readonly filter: FilterSql;
  readonly limit: number;
  /** Overrides `boundedFromRows` (tests use a small corpus). */
  readonly boundedFromRows?: number;
}

/** What one search did, for tests and benchmarks: how many documents it ranked, in how many rounds. */
export interface LexicalTrace {
  strategy: "exhaustive" | "bounded";
  rounds: number;
  /** Documents whose exact score was computed (each round's essential set). */
  scored: number;
}

export function topLexical(pass: LexicalPass, phrases: readonly string[], trace?: LexicalTrace): Ranked[] {
  if (phrases.length === 0 || pass.limit <= 0) return [];
  const exhaustive = (): Ranked[] => {
    if (trace) Object.assign(trace, { strategy: "exhaustive", rounds: 1, scored: -1 });
    return rankAll(pass, phrases);
  };
  if (phrases.length < 2) return exhaustive();
  const rows = rowCount(pass);
  if (rows < (pass.boundedFromRows ?? boundedFromRows)) return exhaustive();
  const counts = phrases.map((phrase) => documentCount(pass, phrase));
  if (counts.reduce((sum, count) => sum + count, 0) < boundedFrom) return exhaustive();
  const order = phrases
    .map((phrase, index) => ({ phrase, count: counts[index] as number }))
    .sort((a, b) => a.count - b.count);
  // tail[j]: the most the phrases from j on can add to a document's score.
  const tail = new Array<number>(order.length + 1).fill(0);
  for (let j = order.length - 1; j >= 0; j--) {
    tail[j] = (tail[j + 1] as number) + bound(rows, (order[j] as { count: number }).count);
  }
  let scopeBound: number | undefined;
  const outsideBound = (j: number): number => {
    if (pass.scopeToken && scopeBound === undefined) scopeBound = bound(rows, documentCount(pass, pass.scopeToken));
    return (tail[j] as number) + (scopeBound ?? 0) + epsilon;
  };
  // First split: the rarest phrases that together match at least `limit` documents.
  let split = 1;
  for (let seen = order[0]?.count ?? 0; split < order.length && seen < pass.limit; split++) {
    seen += order[split]?.count ?? 0;
  }
  // A round ranks its essential documents twice and carries them into JavaScript: ~4× the cost per
  // document of the exhaustive pass, which ranks every match once inside SQLite (measured at 100k).
  const cost = (j: number) => 4 * order.slice(0, j).reduce((sum, entry) => sum + entry.count, 0);
  const matches = counts.reduce((sum, count) => sum + count, 0);
  if (split >= order.length || cost(split) > matches * firstRoundShare) return exhaustive();
  const phrasesOf = (j: number) => order.map((entry) => entry.phrase).slice(0, j);
  const rest = (j: number) => order.map((entry) => entry.phrase).slice(j);
  let scored = scoreEssential(pass, phrasesOf(split), rest(split));
  let rounds = 1;
  let total = scored.length;
  let threshold = kthScore(scored, pass.limit);
  if (!(outsideBound(split) < threshold)) {
    let next = split + 1;
    while (next < order.length && !(outsideBound(next) < threshold)) next++;
    if (next >= order.length || cost(next) > matches * secondRoundShare) return exhaustive();
    scored = scoreEssential(pass, phrasesOf(next), rest(next));
    rounds++;
    total += scored.length;
    threshold = kthScore(scored, pass.limit);
    // Cannot fail (the essential set only grew, so the k-th score did not fall); kept as a guard.
    if (!(outsideBound(next) < threshold)) return exhaustive();
  }
  if (trace) Object.assign(trace, { strategy: "bounded", rounds, scored: total });
  return withIds(pass.db, scored.slice(0, pass.limit));
}

/** A phrase's term tops out at idf × (k1 + 1), whatever the document. */
function bound(rows: number, count: number): number {
  return idf(rows, count) * (k1 + 1);
}

function kthScore(scored: readonly { score: number }[], k: number): number {
  return scored.length >= k ? (scored[k - 1] as { score: number }).score : Number.NEGATIVE_INFINITY;
}

function matchPrefix(pass: LexicalPass): string {
  return pass.scopeToken ? `${pass.scopeToken} AND ` : "";
}

/** The exhaustive pass: FTS5 ranks every document matching any phrase and sorts them (exported for the A/B bench). */
export function rankAll(pass: LexicalPass, phrases: readonly string[]): Ranked[] {
  const rows = statement(
    pass.db,
    `SELECT r.id, f.rank AS rank FROM ${pass.table} f JOIN raw_nodes r ON r.rowid = f.rowid
       WHERE ${pass.table} MATCH ? AND r.scope_key = ? ${pass.filter.sql} ORDER BY f.rank LIMIT ?`,
  ).all(`${matchPrefix(pass)}(${phrases.join(" OR ")})`, pass.scopeKey, ...pass.filter.params, pass.limit) as {
    id: string;
    rank: number;
  }[];
  // FTS5's rank is negated BM25: flip it so larger is better everywhere.
  return rows.map((row) => ({ id: row.id, score: -row.rank }));
}

/**
 * Exact full-query scores of the scope's documents holding an essential phrase, best first, as
 * (rowid, score): FTS5 ranks them in two passes, and only rowids and ranks cross into JavaScript (a
 * join to raw_nodes per row would cost as much as the ranking; it is made only when filters need it).
 */
function scoreEssential(
  pass: LexicalPass,
  essential: readonly string[],
  rest: readonly string[],
): { rowid: number; score: number }[] {
  const either = essential.join(" OR ");
  const doubledMatch = `${matchPrefix(pass)}(${either}) AND (${[...essential, ...rest].join(" OR ")})`;
  // Without filters every row the match keeps is the scope's: the scope token is in the match when
  // other scopes share the table, and when none does the table holds only this scope's rows.
  const doubled = (
    pass.filter.sql
      ? statement(
          pass.db,
          `SELECT f.rowid, f.rank FROM ${pass.table} f CROSS JOIN raw_nodes r ON r.rowid = f.rowid
             WHERE ${pass.table} MATCH ? AND r.scope_key = ? ${pass.filter.sql}`,
          "raw",
        ).all(doubledMatch, pass.scopeKey, ...pass.filter.params)
      : statement(pass.db, `SELECT rowid, rank FROM ${pass.table} WHERE ${pass.table} MATCH ?`, "raw").all(doubledMatch)
  ) as [number, number][];
  if (doubled.length === 0) return [];
  const once = new Map<number, number>(
    statement(pass.db, `SELECT rowid, rank FROM ${pass.table} WHERE ${pass.table} MATCH ?`, "raw").all(either) as [
      number,
      number,
    ][],
  );
  const scored = doubled.map(([rowid, rank]) => ({ rowid, score: (once.get(rowid) ?? 0) - rank }));
  return scored.sort((a, b) => b.score - a.score || a.rowid - b.rowid);
}

/** The raw-node ids of the chosen rows, in their order. */
export function withIds(db: Database, hits: readonly { rowid: number; score: number }[]): Ranked[] {
  const ids = new Map(
    statement(db, "SELECT rowid, id FROM raw_nodes WHERE rowid IN (SELECT value FROM json_each(?))", "raw").all(
      JSON.stringify(hits.map((hit) => hit.rowid)),
    ) as [number, string][],
  );
  return hits.map((hit) => ({ id: ids.get(hit.rowid) as string, score: hit.score }));
}

/** Documents of the whole table (every scope of the tenant) holding the phrase: bm25's df. */
function documentCount(pass: LexicalPass, phrase: string): number {
  return statement(pass.db, `SELECT count(*) FROM ${pass.table} WHERE ${pass.table} MATCH ?`, "pluck").get(
    phrase,
  ) as number;
}

/**
 * The table's row count, bm25's N: the first varint of FTS5's averages record (`<table>_data`, id 1),
 * which FTS5 keeps current on every write; read in one seek instead of counting the rows.
 */
function rowCount(pass: LexicalPass): number {
  const block = statement(pass.db, `SELECT block FROM ${pass.table}_data WHERE id = 1`, "pluck").get() as
    | Uint8Array
    | undefined;
  return block ? readVarint(block) : 0;
}

/** SQLite's variable-length integer: 7 bits a byte, high bit set to continue; a ninth byte holds 8 bits. */
function readVarint(bytes: Uint8Array): number {
  let value = 0;
  for (let index = 0; index < 8; index++) {
    const byte = bytes[index] ?? 0;
    value = value * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) return value;
  }
  return value * 256 + (bytes[8] ?? 0);
}
