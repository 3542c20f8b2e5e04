import type pg from "pg";
import type { Ranked } from "../../core/ranked.ts";
import { type BlockList, type BlockMaxTrace, blockBound, blockMaxTopK, slack } from "../lexical-block-max.ts";
import type { SearchFilters } from "../records.ts";
import type { LexicalField } from "../store.ts";
import { filterSql, hasFilters } from "./filter-sql.ts";
import { decodeBlock } from "./lexical-blocks.ts";
import { bm25, queryLexemes } from "./lexical-terms.ts";
import { oneTripSearch } from "./one-trip-reads.ts";
import type { ScopeContext } from "./scope-context.ts";
import { type Inlinable, type Prepared, prepared, readInOneTrip, type Sql } from "./tenant-transaction.ts";

/**
 * Which BM25 pass answers: `index`, block-max MaxScore in this process over the query terms'
 * blocks (decision 034, the default), or `sql`, the exhaustive aggregation in SQL over every
 * posting of the query terms in the scope (decision 009's pass, on the blocks), kept for A/B runs
 * and as the tests' oracle. Set by `CAIRN_LEXICAL_PASS=sql`; the ids and scores are the same
 * either way (scores within rounding: the sums are added up in different orders).
 */
export type PostgresLexicalPass = "index" | "sql";

let passKind: PostgresLexicalPass = process.env.CAIRN_LEXICAL_PASS === "sql" ? "sql" : "index";

/** Switches the pass for this process (benchmarks and tests); returns the one before. */
export function usePostgresLexicalPass(kind: PostgresLexicalPass): PostgresLexicalPass {
  const before = passKind;
  passKind = kind;
  return before;
}

/** What one search did, for tests and benchmarks. */
export interface PostgresLexicalTrace {
  pass?: PostgresLexicalPass;
  /** Blocks fetched (all of the query terms' in the scope) and blocks whose postings the walk decoded. */
  blocks?: number;
  decoded?: number;
  /** Documents whose score the walk computed in full. */
  scored?: number;
  /** Wall milliseconds: the block statement (round trip included), the walk, the id lookup. */
  fetchMs?: number;
  walkMs?: number;
  idsMs?: number;
  /** Winners whose ids were read from the database (the rest were known to this process). */
  idsRead?: number;
  /** Filtered, past the accepted-list cap: the checks of the walk's winners against the filters. */
  filterChecks?: number;
}

/**
 * BM25 over raw-node text or image-derived text of one scope (the query's terms cut as the SQLite
 * store cuts them, decision 037); best first, larger is better (the
 * negated FTS5 rank, on the same formula: idf = ln((N − df + 0.5) / (df + 0.5)), floored at 1e-6,
 * k1 = 1.2, b = 0.75). Its statistics — the document count N, the average length, each term's
 * document frequency — are this tenant's only (`lexical-statistics.ts`), so no other tenant's data
 * moves a score; term frequencies are the scope's own postings (`lexical_blocks`).
 */
export async function searchLexical(
  context: ScopeContext,
  sql: Sql,
  field: LexicalField,
  query: string,
  options: { limit: number; filters?: SearchFilters },
  trace?: PostgresLexicalTrace,
): Promise<Ranked[]> {
  const words = queryLexemes(query);
  if (words.length === 0 || options.limit === 0) return [];
  if (trace) trace.pass = passKind;
  return passKind === "sql"
    ? exhaustiveLexical(context, sql, field, words, options)
    : blockMaxLexical(context, (statement, values) => sql.query(statement, values), field, words, options, trace);
}

/**
 * The unfiltered block-max pass without a transaction held (decision 036): the block statement
 * rides on the transaction's opening with its COMMIT, in one round trip; winners this process
 * cannot name are looked up in a second one-trip read (a winner forgotten in between is left out,
 * never named). Undefined when this path does not apply (filters, or the exhaustive pass chosen):
 * the caller searches in a transaction.
 */
export async function searchLexicalInOneTrip(
  context: ScopeContext,
  pool: pg.Pool,
  field: LexicalField,
  query: string,
  options: { limit: number; filters?: SearchFilters },
  trace?: PostgresLexicalTrace,
): Promise<Ranked[] | undefined> {
  if (!oneTripSearch() || passKind !== "index" || hasFilters(options.filters)) return undefined;
  const words = queryLexemes(query);
  if (words.length === 0 || options.limit === 0) return [];
  if (trace) trace.pass = passKind;
  const read: Read = (statement, values) =>
    readInOneTrip(pool, context.tenant, "searchLexical", { text: statement, values: values as Inlinable[] });
  return blockMaxLexical(context, read, field, words, options, trace);
}

/** Runs one prepared statement of the pass (in the caller's transaction, or in a one-trip read of its own). */
type Read = <Row extends pg.QueryResultRow>(statement: Prepared, values: readonly unknown[]) => Promise<Row[]>;

interface BlockRow {
  lexeme: string;
  df: number;
  docs: number;
  total_length: number;
  last_rowid: number;
  max_tf: number;
  min_length: number;
  postings: Buffer;
  accepted: number[] | null;
}

/**
 * The statement fetching a search's blocks ($1 tenant, $2 scope key, $3 the query's distinct terms, $4 field, then
 * the filters' values): one row per block of the query terms in the scope, in no particular order
 * (lists are put together here, their blocks in rowid order), each with its term's df and the
 * tenant's totals; `accepted` is the first row's extra column.
 */
export function blockQuery(accepted: string): string {
  // Planned to hold however stale the planner's statistics (a growing store is estimated at a row
  // or two): each query term probes its df, then its blocks in the scope, by primary key (OFFSET 0
  // keeps each lateral probe from being flattened into a scan of every block of the scope).
  return `WITH totals AS MATERIALIZED (
       SELECT docs, total_length FROM lexical_stats WHERE tenant = $1 AND field = $4
     )
     SELECT t.lexeme, t.df, s.docs, s.total_length, b.last_rowid, b.max_tf, b.min_length, b.postings,
       ${accepted} AS accepted
     FROM unnest($3::text[]) AS q (lexeme)
     CROSS JOIN LATERAL (
       SELECT lexeme, df FROM lexical_terms WHERE tenant = $1 AND field = $4 AND lexeme = q.lexeme OFFSET 0
     ) t
     CROSS JOIN totals s
     CROSS JOIN LATERAL (
       SELECT last_rowid, max_tf, min_length, postings FROM lexical_blocks
       WHERE scope_key = $2 AND field = $4 AND lexeme = t.lexeme OFFSET 0
     ) b`;
}

/**
 * The winners' ids: by primary key (`scope_key || ''` keeps the planner off a scope index, the
 * scope still bound), prepared (planning it cost about as much as running it).
 */
const idsStatement = prepared(
  "SELECT rowid, id FROM raw_nodes WHERE scope_key || '' = $1 AND rowid = ANY($2::bigint[])",
);

interface FetchedList extends BlockList {
  readonly blocks: Buffer[];
}

/**
 * The query terms' document frequencies, the tenant's totals and the scope's blocks of those
 * terms, in one round trip (and, with filters, the scope's raw nodes that pass them); the top k
 * by block-max MaxScore here; then the winners' ids.
 */
async function blockMaxLexical(
  context: ScopeContext,
  read: Read,
  field: LexicalField,
  words: readonly string[],
  options: { limit: number; filters?: SearchFilters },
  trace?: PostgresLexicalTrace,
): Promise<Ranked[]> {
  const filtered = hasFilters(options.filters);
  const filter = filterSql(options.filters, "r", 5);
  // With filters, the raw nodes of the scope that pass them ride on the first row, up to
  // `acceptedListCap` of them: the walk asks only about documents that would enter the top k, from
  // this set, without another round trip. Past the cap the column is NULL and the walk's winners
  // are checked against the filters afterwards (`checkedAgainstFilters`): a broad filter over a big
  // scope would otherwise ship every rowid of it with each search.
  const accepted = filtered
    ? `CASE WHEN row_number() OVER () = 1 THEN
         (SELECT CASE WHEN count(*) <= ${acceptedListCap} THEN coalesce(array_agg(passing.rowid), '{}') END
          FROM (SELECT r.rowid FROM raw_nodes r WHERE r.scope_key = $2 ${filter.sql} LIMIT ${acceptedListCap + 1}) passing)
       END`
    : "NULL::bigint[]";
  const fetchStarted = performance.now();
  const rows = await read<BlockRow>(prepared(blockQuery(accepted)), [
    context.tenant,
    context.key,
    words,
    field,
    ...filter.values,
  ]);
  const walkStarted = performance.now();
  const first = rows[0];
  if (!first) return [];
  const rowsCount = Number(first.docs);
  const averageLength = Math.max(Number(first.total_length) / Math.max(rowsCount, 1), 1e-9);
  const byTerm = new Map<string, { idf: number; blocks: { last: number; bound: number; postings: Buffer }[] }>();
  for (const row of rows) {
    let list = byTerm.get(row.lexeme);
    if (!list) {
      const df = Number(row.df);
      list = { idf: Math.max(Math.log((rowsCount - df + 0.5) / (df + 0.5)), 1e-6), blocks: [] };
      byTerm.set(row.lexeme, list);
    }
    const bound = list.idf * blockBound(row.max_tf, row.min_length, averageLength) * slack;
    list.blocks.push({ last: Number(row.last_rowid), bound, postings: row.postings });
  }
  const lists: FetchedList[] = [...byTerm].map(([token, { idf, blocks }]) => {
    // A list's blocks hold disjoint ranges: in order of their last rowids, they are in rowid order.
    blocks.sort((a, b) => a.last - b.last);
    const bounds = blocks.map((block) => block.bound);
    return {
      token,
      idf,
      weight: idf,
      lastDocs: blocks.map((block) => block.last),
      bounds,
      upper: Math.max(...bounds),
      blocks: blocks.map((block) => block.postings),
    };
  });
  const acceptedSet = filtered && first.accepted !== null ? new Set(first.accepted.map(Number)) : null;
  const walked: BlockMaxTrace = { scored: 0 };
  let decoded = 0;
  const walk = (limit: number) =>
    blockMaxTopK(
      {
        lists,
        phrases: lists.map((each) => each.token),
        limit,
        averageLength,
        fetch: (each, block) => {
          decoded++;
          return decodeBlock(each.blocks[block] as Buffer);
        },
        ...(acceptedSet ? { accept: (rowid: number) => acceptedSet.has(rowid) } : {}),
      },
      walked,
    );
  const hits =
    filtered && acceptedSet === null
      ? await checkedAgainstFilters(context, read, filter, options.limit, walk, trace)
      : walk(options.limit);
  const idsStarted = performance.now();
  if (trace) {
    Object.assign(trace, {
      blocks: rows.length,
      decoded,
      scored: walked.scored,
      fetchMs: walkStarted - fetchStarted,
      walkMs: idsStarted - walkStarted,
    });
  }
  if (hits.length === 0) return [];
  // Each winner's posting is in this snapshot, so its raw node is too: its id may come from what
  // this process's vector graphs of the scope know (rowid → id never changes, decision 036);
  // only the rest are read.
  const known = oneTripSearch() ? context.store.ann.knownIds(context.key) : [];
  const idOf = new Map<number, string>();
  const unknown: number[] = [];
  for (const { rowid } of hits) {
    const id = known.find((map) => map.has(rowid))?.get(rowid);
    if (id === undefined) unknown.push(rowid);
    else idOf.set(rowid, id);
  }
  if (unknown.length > 0) {
    const ids = await read<{ rowid: number; id: string }>(idsStatement, [context.key, unknown]);
    for (const row of ids) idOf.set(Number(row.rowid), row.id);
  }
  if (trace) {
    trace.idsMs = performance.now() - idsStarted;
    trace.idsRead = unknown.length;
  }
  return hits.flatMap((hit) => {
    const id = idOf.get(hit.rowid);
    return id === undefined ? [] : [{ id, score: hit.score }];
  });
}

/**
 * Most rowids a filtered search ships from the server (decision 034, amended at stop 32): past it
 * the walk's winners are checked against the filters instead. 20,000 rowids are ~150 KB of text;
 * a filter that passes more is broad enough that a few deepening checks find the top k.
 */
let acceptedListCap = 20_000;

/** Sets the cap for this process (tests make it small to reach the checked path); returns the one before. */
export function usePostgresAcceptedListCap(cap: number): number {
  const before = acceptedListCap;
  acceptedListCap = cap;
  return before;
}

/**
 * The top `limit` that pass the filters, when the set of those that pass was too big to ship: the
 * walk's top 4 × `limit` without the filters, then which of them pass (one read), deepening four
 * times over until `limit` pass or the walk has no more.
 */
async function checkedAgainstFilters(
  context: ScopeContext,
  read: Read,
  filter: { sql: string; values: unknown[] },
  limit: number,
  walk: (limit: number) => { rowid: number; score: number }[],
  trace: PostgresLexicalTrace | undefined,
): Promise<{ rowid: number; score: number }[]> {
  const passing = prepared(
    `SELECT r.rowid FROM raw_nodes r WHERE r.scope_key || '' = $1 AND r.rowid = ANY($2::bigint[]) ${filter.sql.replaceAll(
      /\$(\d+)/g,
      (_, index: string) => `$${Number(index) - 2}`,
    )}`,
  );
  for (let depth = limit * 4; ; depth *= 4) {
    const candidates = walk(depth);
    const rows = await read<{ rowid: number }>(passing, [
      context.key,
      candidates.map((hit) => hit.rowid),
      ...filter.values,
    ]);
    if (trace) trace.filterChecks = (trace.filterChecks ?? 0) + 1;
    const passed = new Set(rows.map((row) => Number(row.rowid)));
    const kept = candidates.filter((hit) => passed.has(hit.rowid));
    if (kept.length >= limit || candidates.length < depth) return kept.slice(0, limit);
  }
}

/** The exhaustive pass: every posting of the query terms in the scope scored and ranked in SQL. */
async function exhaustiveLexical(
  context: ScopeContext,
  sql: Sql,
  field: LexicalField,
  words: readonly string[],
  options: { limit: number; filters?: SearchFilters },
): Promise<Ranked[]> {
  const filter = filterSql(options.filters, "r", 7);
  const limit = `$${7 + filter.values.length}`;
  // `r.scope_key || ''` keeps the raw-node look-up on the primary key (as the SQLite store's
  // `+r.scope_key`), the scope still bound.
  const rows = await sql.query<{ id: string; score: number }>(
    `WITH terms AS MATERIALIZED (
       SELECT t.lexeme, t.df::float8 AS df
       FROM unnest($3::text[]) AS q (lexeme)
       JOIN lexical_terms t ON t.tenant = $1 AND t.field = $4 AND t.lexeme = q.lexeme
     ), totals AS (
       SELECT docs::float8 AS n, total_length::float8 / greatest(docs, 1) AS avgdl
       FROM lexical_stats WHERE tenant = $1 AND field = $4
     ), scored AS (
       SELECT p.rowid AS raw_node_rowid,
         sum(greatest(ln((s.n - t.df + 0.5) / (t.df + 0.5)), 1e-6)
             * (p.tf * ($5::float8 + 1))
             / (p.tf + $5::float8 * (1 - $6::float8 + $6::float8 * p.length / greatest(s.avgdl, 1e-9)))) AS score
       FROM terms t
       CROSS JOIN LATERAL (
         SELECT postings FROM lexical_blocks WHERE scope_key = $2 AND field = $4 AND lexeme = t.lexeme OFFSET 0
       ) b
       CROSS JOIN LATERAL lexical_block_postings(b.postings) p
       CROSS JOIN totals s
       GROUP BY p.rowid
       ${filter.values.length > 0 ? "" : `ORDER BY score DESC, p.rowid LIMIT ${limit}`}
     )
     SELECT r.id, scored.score FROM scored JOIN raw_nodes r ON r.rowid = scored.raw_node_rowid
     WHERE r.scope_key || '' = $2 ${filter.sql}
     ORDER BY scored.score DESC, r.rowid LIMIT ${limit}`,
    [context.tenant, context.key, words, field, bm25.k1, bm25.b, ...filter.values, options.limit],
  );
  return rows.map((row) => ({ id: row.id, score: row.score }));
}
