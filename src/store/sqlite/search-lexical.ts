import type { Ranked } from "../../core/ranked.ts";
import type { SearchFilters } from "../records.ts";
import type { LexicalField } from "../store.ts";
import { filterSql } from "./filter-sql.ts";
import { toPhrases } from "./fts-query.ts";
import { type LexicalTrace, topLexical } from "./lexical-top-k.ts";
import type { ScopeContext } from "./scope-context.ts";
import { statement } from "./statements.ts";
import { tenantExists, tenantKeyRange } from "./tenants.ts";

/**
 * BM25 over raw-node text or image-derived text of one scope; best first. The top `limit` is found
 * without ranking every document that matches a common word (`lexical-top-k.ts`, decision 021).
 */
export function searchLexical(
  context: ScopeContext,
  field: LexicalField,
  query: string,
  options: { limit: number; filters?: SearchFilters },
  trace?: LexicalTrace,
): Ranked[] {
  const phrases = toPhrases(query);
  if (phrases.length === 0) return [];
  // Each tenant has its own FTS tables, so BM25's document counts and lengths come from its rows alone.
  if (!tenantExists(context.db, context.tenantStorage)) return [];
  const tenant = context.tenantStorage;
  // The scope token keeps ranking work proportional to this scope when the tenant's other scopes
  // share the table. But FTS5's bm25 counts the documents of every phrase on every query, the
  // token's too: a pass over the whole scope (~5 ms of ~11 at 100k). With no other scope of the
  // tenant stored it cannot exclude anything, so it is left out; the raw_nodes join keeps
  // results scoped either way.
  return topLexical(
    {
      db: context.db,
      table: field === "text" ? tenant.textTable : tenant.imageTextTable,
      scopeKey: context.key,
      scopeToken: otherScopesStored(context) ? context.scopeToken : null,
      filter: filterSql(context, options.filters, "r"),
      limit: options.limit,
    },
    phrases,
    trace,
  );
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
