import { textSearchConfig } from "./lexical-terms.ts";
import type { Sql } from "./tenant-transaction.ts";

/** Lexical documents to insert, column by column (one position per document): the arrays a statement unnests. */
export interface LexicalDocumentColumns {
  readonly rowids: readonly unknown[];
  readonly fields: readonly unknown[];
  readonly bodies: readonly unknown[];
}

/** One scope's documents, inserted through `unnest($3, $4, $5)` with the tenant as $1 and the scope key as $2. */
export const documentParameters = (
  scope: { readonly tenant: string; readonly key: string },
  documents: LexicalDocumentColumns,
): unknown[] => [scope.tenant, scope.key, documents.rowids, documents.fields, documents.bodies];

/**
 * Inserts lexical documents (raw-node text or image-derived text, already as `lexicalDocument`
 * makes it) of one scope: one `lexical_docs` row (with its terms and their frequencies) per
 * document; its postings follow by trigger. The caller adds them to the tenant's statistics. A document's length is
 * its number of term occurrences (stop words are not terms).
 */
export async function insertLexicalDocuments(
  sql: Sql,
  scope: { readonly tenant: string; readonly key: string },
  documents: LexicalDocumentColumns,
): Promise<void> {
  await sql.query(
    `WITH ${lexicalDocumentsParts("unnest($3::bigint[], $4::text[], $5::text[]) AS x (rowid, field, body)", "$1", "$2")}
     SELECT 1`,
    documentParameters(scope, documents),
  );
}

/**
 * The parts of a statement (`WITH` items, the first named `lexical_terms_of`) that insert lexical
 * documents (their postings follow, by trigger): `source` is a FROM item with columns `rowid`, `field` and `body`
 * named `x`; `tenant` and `scope` are SQL expressions. Each insert runs to completion whether or
 * not the statement reads it.
 *
 * A document row carries its terms (`terms`, in lexeme order) and their frequencies (`tfs`, in
 * step): the statistics are counted from them, and the statement-level triggers of migration 12
 * (`lexical-blocks.ts`) append its postings to their lists' blocks when it is inserted and take them
 * out when it is deleted (decision 034).
 */
export function lexicalDocumentsParts(source: string, tenant: string, scope: string): string {
  // Both arrays come from one aggregation over the same rows, so they stay in step (in the vector's
  // lexeme order).
  return `lexical_terms_of AS (
       SELECT x.rowid, x.field, to_tsvector('${textSearchConfig}', x.body) AS vector
       FROM ${source}
     ), lexical_documents AS (
       SELECT o.rowid, o.field, coalesce(a.terms, '{}') AS terms, coalesce(a.tfs, '{}') AS tfs,
         coalesce(a.length, 0)::int AS length
       FROM lexical_terms_of o CROSS JOIN LATERAL (
         SELECT array_agg(u.lexeme) AS terms, array_agg(array_length(u.positions, 1)) AS tfs,
           sum(array_length(u.positions, 1)) AS length
         FROM unnest(o.vector) u
       ) a
     ), lexical_docs_rows AS (
       INSERT INTO lexical_docs (raw_node_rowid, field, tenant, scope_key, length, terms, tfs)
       SELECT rowid, field, ${tenant}, ${scope}, length, terms, tfs FROM lexical_documents
     )`;
}
