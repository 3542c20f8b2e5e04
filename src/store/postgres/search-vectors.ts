import { StoreError } from "../../core/errors.ts";
import type { Ranked } from "../../core/ranked.ts";
import type { SearchFilters } from "../records.ts";
import { filterSql, hasFilters } from "./filter-sql.ts";
import { oneTripSearch } from "./one-trip-reads.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";
import { type SpaceRow, vectorLiteral } from "./vector-spaces.ts";

/** Several images of one turn can match: image rows fetched per wanted raw node, so `limit` distinct ones remain. */
const imageOverFetch = 4;

interface Hit {
  readonly id: string;
  /** Ties are broken by storage order: raw-node ids are random, so ordering by them would be too. */
  readonly rowid: number;
  readonly distance: number;
}

/**
 * Nearest raw nodes of one scope in one vector space, best first, score = cosine similarity.
 * Filter by scope first, then rank: a scope with at most `exactBelow` vectors in the space is
 * scanned exactly; a bigger one goes through this process's in-memory HNSW index of the scope
 * (`ann-indexes.ts`, caught up in this transaction's snapshot), whose candidates are then scored
 * exactly from the rows this snapshot sees, with the filters applied. While that index is being
 * built, or when the candidates that survive are fewer than asked (a narrow filter), the scope is
 * scanned exactly.
 */
export async function searchVectors(
  context: ScopeContext,
  sql: Sql,
  spaceName: string,
  vector: Float32Array,
  options: { limit: number; filters?: SearchFilters },
): Promise<Ranked[]> {
  const space = await context.store.spaces.named(spaceName);
  if (!space || options.limit === 0) return [];
  if (space.dimensions !== vector.length) {
    throw new StoreError("searchVectors", `space ${spaceName} is ${space.dimensions}-d, query is ${vector.length}-d`);
  }
  let large = knownLarge(context, space);
  if (!large && !options.filters) {
    // Not known to be large and no filter: one statement counts the scope (up to exactBelow + 1)
    // and, when it is small, ranks it exactly — one round trip instead of a count, then a scan.
    const small = await exactIfSmall(context, sql, space, vector, options.limit);
    if (small) return ranked(small, options.limit);
    large = true;
  } else if (!large) {
    large = await isLarge(context, sql, space);
  }
  if (large) {
    const approximate = await nearestIndexed(context, sql, space, vector, options);
    if (approximate && approximate.length >= options.limit) return ranked(approximate, options.limit);
  }
  return ranked(await nearest(context, sql, space, vector, options), options.limit);
}

/**
 * The unfiltered search of a scope whose graph is built, in one round trip and no transaction held
 * (decision 036): the catch-up read and the COMMIT ride on the transaction's opening, and the
 * graph's candidates are scored by the graph's own f32 vectors (as the SQLite store scores them)
 * and named from the raw nodes the graph was built and caught up with. Undefined when this path
 * does not apply (a filter, no graph yet, a graph the snapshot cannot use, fewer raw nodes than
 * asked): the caller runs `searchVectors` in a transaction, which decides as before.
 */
export async function searchVectorsInOneTrip(
  context: ScopeContext,
  spaceName: string,
  vector: Float32Array,
  options: { limit: number; filters?: SearchFilters },
): Promise<Ranked[] | undefined> {
  if (!oneTripSearch() || hasFilters(options.filters) || options.limit === 0) return undefined;
  const space = await context.store.spaces.named(spaceName);
  if (!space || space.dimensions !== vector.length) return undefined;
  const { ann } = context.store;
  const wanted = space.kind === "image" ? options.limit * imageOverFetch : options.limit;
  const hits = await ann.nearestNodes(space, context, vector, wanted);
  if (!hits || hits.length < options.limit) return undefined;
  return ranked(hits, options.limit);
}

/**
 * The index's candidates scored exactly: rows of this scope the snapshot sees (a forgotten one is
 * gone), passing the filters, each raw node at its best vector. Null when the scope has no index yet.
 */
async function nearestIndexed(
  context: ScopeContext,
  sql: Sql,
  space: SpaceRow,
  vector: Float32Array,
  options: { limit: number; filters?: SearchFilters },
): Promise<Hit[] | null> {
  const { ann } = context.store;
  const wanted = space.kind === "image" ? options.limit * imageOverFetch : options.limit;
  const k = hasFilters(options.filters) ? wanted * ann.options.filterOverFetch : wanted;
  const neighbours = await ann.search(sql, space, context, vector, k);
  if (!neighbours) return null;
  if (neighbours.length === 0) return [];
  const filter = filterSql(options.filters, "v", 5);
  // MATERIALIZED: the candidates by (scope, seq) first, then one raw-node look-up each; left to
  // itself the planner may walk the scope's raw nodes and probe the vectors per node (26 ms
  // against 2 at 400 candidates of 3,000).
  return sql.query<Hit>(
    `WITH candidates AS MATERIALIZED (
       SELECT v.raw_node_rowid, v.embedding <=> $2::text::vector AS distance FROM ${space.table_name} v
       WHERE v.scope_key = $1 AND v.seq = ANY($4::bigint[]) ${filter.sql}
     )
     SELECT r.id, r.rowid, min(c.distance) AS distance
     FROM candidates c JOIN raw_nodes r ON r.rowid = c.raw_node_rowid AND r.scope_key || '' = $1
     GROUP BY r.id, r.rowid ORDER BY distance, r.rowid LIMIT $3`,
    [
      context.key,
      vectorLiteral(vector),
      options.limit,
      neighbours.map((neighbour) => neighbour.rowid),
      ...filter.values,
    ],
  );
}

/**
 * How long a scope found to hold more than `exactBelow` vectors of a space is taken to still hold
 * them without counting again: counting reads `exactBelow` + 1 rows (each checked against the
 * tenant wall), a cost every search paid. The verdict only picks the plan, never the answer: a
 * scope that shrank meanwhile comes back short from the index and is scanned exactly.
 */
const largeVerdictMs = 30_000;

function largeKey(context: ScopeContext, space: SpaceRow): string {
  return `${space.table_name}\u0000${context.key}`;
}

function knownLarge(context: ScopeContext, space: SpaceRow): boolean {
  const known = context.store.largeScopes.get(largeKey(context, space));
  return known !== undefined && Date.now() - known < largeVerdictMs;
}

function rememberSize(context: ScopeContext, space: SpaceRow, large: boolean): void {
  if (large) context.store.largeScopes.set(largeKey(context, space), Date.now());
  else context.store.largeScopes.delete(largeKey(context, space));
}

/**
 * The scope's exact top `limit` when it holds at most `exactBelow` vectors of the space, else
 * undefined (and the scope remembered as large). The first row carries the bounded count; the
 * ranking below it runs only when the count is small (a one-time filter: no distance is computed
 * for a large scope).
 */
async function exactIfSmall(
  context: ScopeContext,
  sql: Sql,
  space: SpaceRow,
  vector: Float32Array,
  limit: number,
): Promise<Hit[] | undefined> {
  const { exactBelow } = context.store.vectorSearch;
  const rows = await sql.query<Hit & { n: number | null }>(
    `WITH candidates AS MATERIALIZED (
       SELECT v.raw_node_rowid, v.embedding FROM ${space.table_name} v WHERE v.scope_key = $1 LIMIT $4
     ), size AS MATERIALIZED (SELECT count(*) AS n FROM candidates)
     SELECT NULL AS id, NULL AS rowid, NULL AS distance, n FROM size
     UNION ALL
     (SELECT r.id, r.rowid, min(c.embedding <=> $2::text::vector) AS distance, NULL AS n
      FROM candidates c JOIN raw_nodes r ON r.rowid = c.raw_node_rowid AND r.scope_key || '' = $1
      WHERE (SELECT n FROM size) <= $5
      GROUP BY r.id, r.rowid ORDER BY distance, r.rowid LIMIT $3)`,
    [context.key, vectorLiteral(vector), limit, exactBelow + 1, exactBelow],
  );
  const size = rows.find((row) => row.n !== null)?.n ?? 0;
  const large = size > exactBelow;
  rememberSize(context, space, large);
  return large ? undefined : rows.filter((row) => row.n === null);
}

async function isLarge(context: ScopeContext, sql: Sql, space: SpaceRow): Promise<boolean> {
  const { exactBelow } = context.store.vectorSearch;
  const [size] = await sql.query<{ n: number }>(
    `SELECT count(*) AS n FROM (SELECT 1 FROM ${space.table_name} WHERE scope_key = $1 LIMIT $2) scoped`,
    [context.key, exactBelow + 1],
  );
  const large = (size?.n ?? 0) > exactBelow;
  rememberSize(context, space, large);
  return large;
}

/**
 * `r.scope_key || ''` (still binding the scope) keeps the raw-node look-up on the primary key: a
 * new scope is estimated at a row or two, and the planner would rather walk the scope's index once
 * per hit.
 */
async function nearest(
  context: ScopeContext,
  sql: Sql,
  space: SpaceRow,
  vector: Float32Array,
  options: { limit: number; filters?: SearchFilters },
): Promise<Hit[]> {
  const filter = filterSql(options.filters, "v", 4);
  // MATERIALIZED: the scope's (filtered) rows first, then every distance computed.
  return sql.query<Hit>(
    `WITH candidates AS MATERIALIZED (
       SELECT v.raw_node_rowid, v.embedding FROM ${space.table_name} v WHERE v.scope_key = $1 ${filter.sql}
     )
     SELECT r.id, r.rowid, min(c.embedding <=> $2::text::vector) AS distance
     FROM candidates c JOIN raw_nodes r ON r.rowid = c.raw_node_rowid AND r.scope_key || '' = $1
     GROUP BY r.id, r.rowid ORDER BY distance, r.rowid LIMIT $3`,
    [context.key, vectorLiteral(vector), options.limit, ...filter.values],
  );
}

/** Best first; equal distances in storage order. */
function ranked(hits: readonly Hit[], limit: number): Ranked[] {
  return [...hits]
    .sort((left, right) => left.distance - right.distance || left.rowid - right.rowid)
    .slice(0, limit)
    .map((hit) => ({ id: hit.id, score: 1 - hit.distance }));
}
