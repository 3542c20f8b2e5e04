import type { Ranked } from "../../core/ranked.ts";
import type { SearchFilters } from "../records.ts";
import type { LexicalField } from "../store.ts";
import { filterSql } from "./filter-sql.ts";
import { toMatchExpression } from "./fts-query.ts";
import type { LexicalHitRow } from "./record-rows.ts";
import type { ScopeContext } from "./scope-context.ts";
import { statement } from "./statements.ts";
import { tenantExists, tenantKeyRange } from "./tenants.ts";

/** BM25 over raw-node text or image-derived text of one scope; best first. */
export function searchLexical(
  context: ScopeContext,
  field: LexicalField,
  query: string,
  options: { limit: number; filters?: SearchFilters },
): Ranked[] {
  const terms = toMatchExpression(query);
  if (!terms) return [];
  // Each tenant has its own FTS tables, so BM25's document counts and lengths come from its rows alone.
  if (!tenantExists(context.db, context.tenantStorage)) return [];
  const tenant = context.tenantStorage;
  const table = field === "text" ? tenant.textTable : tenant.imageTextTable;
  // The scope token keeps ranking work proportional to this scope when the tenant's other scopes
  // share the table. But FTS5's bm25 counts the documents of every phrase on every query, the
  // token's too: a pass over the whole scope (~5 ms of ~11 at 100k). With no other scope of the
  // tenant stored it cannot exclude anything, so it is left out; the raw_nodes join below keeps
  // results scoped either way.
  const match = otherScopesStored(context) ? `${context.scopeToken} AND (${terms})` : terms;
  const filter = filterSql(context, options.filters, "r");
  const rows = statement(
    context.db,
    `SELECT r.id, f.rank AS rank FROM ${table} f JOIN raw_nodes r ON r.rowid = f.rowid
       WHERE ${table} MATCH ? AND r.scope_key = ? ${filter.sql} ORDER BY f.rank LIMIT ?`,
  ).all(match, context.key, ...filter.params, options.limit) as LexicalHitRow[];
  // FTS5's rank is negated BM25: flip it so larger is better everywhere.
  return rows.map((row) => ({ id: row.id, score: -row.rank }));
}

/** Two index seeks (the tenant's keys sort around this one), so it costs microseconds at any size. */
function otherScopesStored(context: ScopeContext): boolean {
  const [low, high] = tenantKeyRange(context.tenant);
  return (
    statement(
      context.db,
      `SELECT EXISTS (SELECT 1 FROM raw_nodes WHERE scope_key >= ? AND scope_key < ?)
             OR EXISTS (SELECT 1 FROM raw_nodes WHERE scope_key > ? AND scope_key < ?)`,
      "pluck",
    ).get(low, context.key, context.key, high) === 1
  );
}
