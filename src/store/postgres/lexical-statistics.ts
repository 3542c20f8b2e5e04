import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";

/**
 * BM25's per-tenant statistics (`lexical_terms`, `lexical_stats`), kept in step with the lexical
 * documents of the tenant: a commit adds its documents' terms, a forget takes them away (and a term
 * no document holds any more loses its row). Both count a document's terms from its row
 * (`lexical_docs.terms`), not from its postings. A search then reads a handful of rows instead of
 * counting the tenant's documents (see decision 009 for the measurements).
 *
 * These rows are shared by every writer of a tenant, so their locks are taken in one order —
 * terms sorted by field and lexeme, then the field totals — and as late in the transaction as the
 * caller can, to keep concurrent writers of the tenant from waiting long or deadlocking.
 */

/** Adds the documents of these raw nodes (already inserted) to the tenant's statistics. */
export async function addLexicalStatistics(
  context: Pick<ScopeContext, "tenant">,
  sql: Sql,
  rowids: readonly number[],
): Promise<void> {
  if (rowids.length === 0) return;
  await sql.query(addLexicalTermsStatement("$1", "$2"), [context.tenant, rowids]);
  await sql.query(addLexicalTotalsStatement("$1", "$2"), [context.tenant, rowids]);
}

/** The upsert adding the documents of raw nodes `rowids` (a bigint[] parameter) to the tenant's term counts. */
export function addLexicalTermsStatement(tenant: string, rowids: string): string {
  return `INSERT INTO lexical_terms (tenant, field, lexeme, df)
     SELECT ${tenant}, d.field, u.lexeme, count(*) FROM lexical_docs d, unnest(d.terms) AS u (lexeme)
     WHERE d.raw_node_rowid = ANY(${rowids}::bigint[]) GROUP BY d.field, u.lexeme ORDER BY d.field, u.lexeme
     ON CONFLICT (tenant, field, lexeme) DO UPDATE SET df = lexical_terms.df + excluded.df`;
}

/** The upsert adding the documents of raw nodes `rowids` to the tenant's per-field totals; after the terms. */
export function addLexicalTotalsStatement(tenant: string, rowids: string): string {
  return `INSERT INTO lexical_stats (tenant, field, docs, total_length)
     SELECT ${tenant}, field, count(*), sum(length) FROM lexical_docs
     WHERE raw_node_rowid = ANY(${rowids}::bigint[]) GROUP BY field ORDER BY field
     ON CONFLICT (tenant, field) DO UPDATE SET docs = lexical_stats.docs + excluded.docs,
       total_length = lexical_stats.total_length + excluded.total_length`;
}

/** Takes the documents of these raw nodes (still present) out of the tenant's statistics. */
export async function removeLexicalStatistics(
  context: Pick<ScopeContext, "tenant">,
  sql: Sql,
  rowids: readonly number[],
): Promise<void> {
  if (rowids.length === 0) return;
  const removed = `SELECT d.field, u.lexeme, count(*)::int AS n FROM lexical_docs d, unnest(d.terms) AS u (lexeme)
     WHERE d.raw_node_rowid = ANY($2::bigint[]) GROUP BY d.field, u.lexeme`;
  // Locked first, in the order commits take them, before any is changed.
  await sql.query(
    `SELECT 1 FROM lexical_terms t JOIN (${removed}) r ON t.field = r.field AND t.lexeme = r.lexeme
     WHERE t.tenant = $1 ORDER BY t.field, t.lexeme FOR UPDATE OF t`,
    [context.tenant, rowids],
  );
  await sql.query(
    `DELETE FROM lexical_terms t USING (${removed}) r
     WHERE t.tenant = $1 AND t.field = r.field AND t.lexeme = r.lexeme AND t.df <= r.n`,
    [context.tenant, rowids],
  );
  await sql.query(
    `UPDATE lexical_terms t SET df = t.df - r.n FROM (${removed} ORDER BY 1, 2) r
     WHERE t.tenant = $1 AND t.field = r.field AND t.lexeme = r.lexeme`,
    [context.tenant, rowids],
  );
  await sql.query(
    `UPDATE lexical_stats s SET docs = s.docs - r.docs, total_length = s.total_length - r.total_length
     FROM (SELECT field, count(*) AS docs, sum(length) AS total_length FROM lexical_docs
           WHERE raw_node_rowid = ANY($2::bigint[]) GROUP BY field) r
     WHERE s.tenant = $1 AND s.field = r.field`,
    [context.tenant, rowids],
  );
}
