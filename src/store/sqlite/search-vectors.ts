import { StoreError } from "../../core/errors.ts";
import type { Ranked } from "../../core/ranked.ts";
import type { SearchFilters } from "../records.ts";
import type { Neighbour } from "../vector-index.ts";
import { filterSql, hasFilters, vectorFilterSql } from "./filter-sql.ts";
import type { RowidIdRow, VectorHitRow } from "./record-rows.ts";
import type { ScopeContext } from "./scope-context.ts";
import { statement } from "./statements.ts";
import { rawNodeRowidOf, vectorTableOf } from "./vector-rows.ts";

/** Several images of one turn can match: image rows fetched per wanted raw node, so `limit` distinct ones remain. */
const imageOverFetch = 4;

/**
 * Nearest raw nodes of one scope in one vector space, best first, score = cosine similarity. Above
 * the ANN threshold a partition is searched through its HNSW index (over-fetching when filters
 * apply, since they are checked afterwards); below it, while its index is being built, or when
 * filters leave too few candidates, vec0 scans the partition exactly.
 */
export function searchVectors(
  context: ScopeContext,
  spaceName: string,
  vector: Float32Array,
  options: { limit: number; filters?: SearchFilters },
): Ranked[] {
  const space = context.store.space(spaceName);
  if (!space) return [];
  if (space.dimensions !== vector.length) {
    throw new StoreError("searchVectors", `space ${spaceName} is ${space.dimensions}-d, query is ${vector.length}-d`);
  }
  const wanted = space.kind === "image" ? options.limit * imageOverFetch : options.limit;
  const filtered = hasFilters(options.filters);
  const indexes = context.store.vectorIndexes;
  const neighbours = indexes.search(
    vectorTableOf(space),
    context.key,
    vector,
    filtered ? wanted * indexes.options.filterOverFetch : wanted,
  );
  if (neighbours) {
    const ranked = rankNodes(context, space.kind, neighbours, options);
    if (!filtered || ranked.length >= options.limit) return ranked;
  }
  const filter = vectorFilterSql(context, options.filters);
  const rows = statement(
    context.db,
    `SELECT rowid, distance FROM ${space.table_name} WHERE embedding MATCH ? AND k = ? AND scope_key = ? ${filter.sql}`,
  ).all(vector, wanted, context.key, ...filter.params) as VectorHitRow[];
  // vec0 applied the filters already.
  const exact = rows.map((row) => ({ rowid: row.rowid, similarity: 1 - row.distance }));
  return rankNodes(context, space.kind, exact, { limit: options.limit });
}

/**
 * Vector hits → raw nodes, best first: a node scores its best vector; rowids that are not (or no
 * longer) this scope's raw nodes, or that fail the filters, are dropped. Ids are read best first, only
 * as many as `limit` still needs: at 1M raw nodes each is a random read of a wide row (~15 µs), and an
 * image pass over-fetches four hits per wanted node.
 */
function rankNodes(
  context: ScopeContext,
  kind: "text" | "image",
  neighbours: readonly Neighbour[],
  options: { limit: number; filters?: SearchFilters },
): Ranked[] {
  const best = new Map<number, number>();
  for (const { rowid, similarity } of neighbours) {
    const nodeRowid = rawNodeRowidOf(kind, rowid);
    if (similarity > (best.get(nodeRowid) ?? Number.NEGATIVE_INFINITY)) best.set(nodeRowid, similarity);
  }
  if (best.size === 0 || options.limit <= 0) return [];
  // Equal scores by rowid, the order SQLite returned them in when every id was read at once.
  const ordered = [...best].sort((left, right) => right[1] - left[1] || left[0] - right[0]);
  const filter = filterSql(context, options.filters, "r");
  // `+r.scope_key`: without it SQLite walks the whole scope's index instead of the rowid list.
  const readIds = statement(
    context.db,
    `SELECT r.rowid, r.id FROM raw_nodes r WHERE r.rowid IN (SELECT value FROM json_each(?)) AND +r.scope_key = ? ${filter.sql}`,
  );
  const ranked: Ranked[] = [];
  for (let start = 0; start < ordered.length && ranked.length < options.limit; ) {
    const chunk = ordered.slice(start, start + options.limit - ranked.length);
    start += chunk.length;
    const ids = new Map(
      (readIds.all(JSON.stringify(chunk.map(([rowid]) => rowid)), context.key, ...filter.params) as RowidIdRow[]).map(
        (row) => [row.rowid, row.id],
      ),
    );
    for (const [rowid, score] of chunk) {
      const id = ids.get(rowid);
      if (id !== undefined) ranked.push({ id, score });
    }
  }
  return ranked;
}
