import type { Ranked } from "../../core/ranked.ts";
import type { SearchFilters } from "../records.ts";
import type { LexicalField } from "../store.ts";
import { filterSql } from "./filter-sql.ts";
import { bm25, queryWords, textSearchConfig } from "./lexical-terms.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";

/**
 * BM25 over raw-node text or image-derived text of one scope; best first, larger is better (the
 * negated FTS5 rank, on the same formula: idf = ln((N − df + 0.5) / (df + 0.5)), floored at 1e-6,
 * k1 = 1.2, b = 0.75). Its statistics — the document count N, the average length, each term's
 * document frequency — are this tenant's only (`lexical-statistics.ts`), so no other tenant's data
 * moves a score; term frequencies are the scope's own postings (`lexical_postings`), read by index.
 */
export async function searchLexical(
  context: ScopeContext,
  sql: Sql,
  field: LexicalField,
  query: string,
  options: { limit: number; filters?: SearchFilters },
): Promise<Ranked[]> {
  const words = queryWords(query);
  if (!words || options.limit === 0) return [];
  const filter = filterSql(options.filters, "r", 7);
  const limit = `$${7 + filter.values.length}`;
  // Planned to hold when the planner misjudges a scope (a new one is estimated at a row or two):
  // each query term probes its postings in the scope by index (the OFFSET 0 keeps that lateral
  // probe from being flattened into a scan of all the scope's postings); without filters only the
  // best `limit` are looked up; `r.scope_key || ''` keeps the raw-node look-up on the primary key
  // (as the SQLite store's `+r.scope_key`), the scope still bound.
  const rows = await sql.query<{ id: string; score: number }>(
    `WITH terms AS MATERIALIZED (
       SELECT t.lexeme, t.df::float8 AS df
       FROM (SELECT DISTINCT lexeme FROM unnest(to_tsvector('${textSearchConfig}', $3))) q
       JOIN lexical_terms t ON t.tenant = $1 AND t.field = $4 AND t.lexeme = q.lexeme
     ), totals AS (
       SELECT docs::float8 AS n, total_length::float8 / greatest(docs, 1) AS avgdl
       FROM lexical_stats WHERE tenant = $1 AND field = $4
     ), scored AS (
       SELECT p.raw_node_rowid,
         sum(greatest(ln((s.n - t.df + 0.5) / (t.df + 0.5)), 1e-6)
             * (p.tf * ($5::float8 + 1))
             / (p.tf + $5::float8 * (1 - $6::float8 + $6::float8 * p.length / greatest(s.avgdl, 1e-9)))) AS score
       FROM terms t
       CROSS JOIN LATERAL (
         SELECT raw_node_rowid, tf, length FROM lexical_postings
         WHERE scope_key = $2 AND field = $4 AND lexeme = t.lexeme OFFSET 0
       ) p
       CROSS JOIN totals s
       GROUP BY p.raw_node_rowid
       ${filter.values.length > 0 ? "" : `ORDER BY score DESC, p.raw_node_rowid LIMIT ${limit}`}
     )
     SELECT r.id, scored.score FROM scored JOIN raw_nodes r ON r.rowid = scored.raw_node_rowid
     WHERE r.scope_key || '' = $2 ${filter.sql}
     ORDER BY scored.score DESC, r.rowid LIMIT ${limit}`,
    [context.tenant, context.key, words, field, bm25.k1, bm25.b, ...filter.values, options.limit],
  );
  return rows.map((row) => ({ id: row.id, score: row.score }));
}
