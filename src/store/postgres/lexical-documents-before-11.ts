import { hasCjk, lexicalDocument } from "../lexical-text.ts";
import type { LexicalDocumentColumns } from "./lexical-documents.ts";
import { forEachTenant, type Sql } from "./tenant-transaction.ts";

/**
 * The text search configuration stores used for their terms before decision 037 (the Snowball
 * stemmer, English stop words dropped); migration 13 cuts every document again as FTS5 does.
 */
const textSearchConfig = "english";

/**
 * The lexical tables as migrations 1–10 left them: a document row without its terms, one posting
 * row per term with a foreign key to its raw node, and the statistics counted from the postings.
 * Only migration 6 writes through this file (it runs on a database of that shape); migration 11
 * (`migrations.ts`) then moves every document to the current shape (`lexical-documents.ts`).
 */

/**
 * Migration 6: documents written before CJK runs were indexed as bigrams (`lexical-text.ts`) are
 * indexed again, tenant by tenant inside its wall, with the tenant's statistics kept in step. Only
 * raw nodes whose text or image-derived text holds a CJK character are touched, and only their
 * lexical rows; the raw nodes are only read.
 */
export async function reindexCjkDocuments(sql: Sql): Promise<void> {
  await forEachTenant(sql, async (tenant) => {
    const rows = await sql.query<{ rowid: number; scope_key: string; text: string; image_text: string | null }>(
      `SELECT r.rowid, r.scope_key, r.text,
         (SELECT string_agg(concat_ws(' ', nullif(i.caption, ''), nullif(i.derived_text, '')), ' ' ORDER BY i.ordinal)
          FROM raw_node_images i WHERE i.raw_node_rowid = r.rowid) AS image_text
       FROM raw_nodes r ORDER BY r.rowid`,
    );
    // A node with CJK in either field has both its documents written again, as a commit writes them
    // (the text always, image-derived text when there is some): unchanged text comes out the same.
    const changed = new Map<string, { rowids: number[]; fields: string[]; bodies: string[] }>();
    for (const row of rows) {
      const imageText = row.image_text ?? "";
      if (!hasCjk(row.text) && !hasCjk(imageText)) continue;
      const documents = changed.get(row.scope_key) ?? { rowids: [], fields: [], bodies: [] };
      documents.rowids.push(row.rowid);
      documents.fields.push("text");
      documents.bodies.push(lexicalDocument(row.text));
      if (imageText.trim()) {
        documents.rowids.push(row.rowid);
        documents.fields.push("imageText");
        documents.bodies.push(lexicalDocument(imageText));
      }
      changed.set(row.scope_key, documents);
    }
    if (changed.size === 0) return;
    const rowids = [...new Set([...changed.values()].flatMap((documents) => documents.rowids))];
    await removeStatisticsBefore11(tenant, sql, rowids);
    await sql.query("DELETE FROM lexical_postings WHERE raw_node_rowid = ANY($1::bigint[])", [rowids]);
    await sql.query("DELETE FROM lexical_docs WHERE raw_node_rowid = ANY($1::bigint[])", [rowids]);
    for (const [key, documents] of changed) await insertDocumentsBefore11(sql, { tenant, key }, documents);
    await addStatisticsBefore11(tenant, sql, rowids);
  });
}

/** Documents and their posting rows, in the tables' shape before migration 11. */
export async function insertDocumentsBefore11(
  sql: Sql,
  scope: { readonly tenant: string; readonly key: string },
  documents: LexicalDocumentColumns,
): Promise<void> {
  await sql.query(
    `WITH lexical_terms_of AS (
       SELECT x.rowid, x.field, to_tsvector('${textSearchConfig}', x.body) AS terms
       FROM unnest($3::bigint[], $4::text[], $5::text[]) AS x (rowid, field, body)
     ), lexical_documents AS (
       SELECT rowid, field, terms,
         coalesce((SELECT sum(array_length(u.positions, 1)) FROM unnest(terms) u), 0)::int AS length
       FROM lexical_terms_of
     ), lexical_docs_rows AS (
       INSERT INTO lexical_docs (raw_node_rowid, field, tenant, scope_key, length)
       SELECT rowid, field, $1, $2, length FROM lexical_documents
     ), lexical_postings_rows AS (
       INSERT INTO lexical_postings (scope_key, field, lexeme, raw_node_rowid, tenant, tf, length)
       SELECT $2, d.field, u.lexeme, d.rowid, $1, array_length(u.positions, 1), d.length
       FROM lexical_documents d, unnest(d.terms) u
     )
     SELECT 1`,
    [scope.tenant, scope.key, documents.rowids, documents.fields, documents.bodies],
  );
}

/** Adds these raw nodes' documents to the tenant's statistics, counted from their postings (before migration 11). */
export async function addStatisticsBefore11(tenant: string, sql: Sql, rowids: readonly number[]): Promise<void> {
  if (rowids.length === 0) return;
  await sql.query(
    `INSERT INTO lexical_terms (tenant, field, lexeme, df)
     SELECT $1, field, lexeme, count(*) FROM lexical_postings
     WHERE raw_node_rowid = ANY($2::bigint[]) GROUP BY field, lexeme ORDER BY field, lexeme
     ON CONFLICT (tenant, field, lexeme) DO UPDATE SET df = lexical_terms.df + excluded.df`,
    [tenant, rowids],
  );
  await sql.query(
    `INSERT INTO lexical_stats (tenant, field, docs, total_length)
     SELECT $1, field, count(*), sum(length) FROM lexical_docs
     WHERE raw_node_rowid = ANY($2::bigint[]) GROUP BY field ORDER BY field
     ON CONFLICT (tenant, field) DO UPDATE SET docs = lexical_stats.docs + excluded.docs,
       total_length = lexical_stats.total_length + excluded.total_length`,
    [tenant, rowids],
  );
}

/** Takes these raw nodes' documents (still present) out of the tenant's statistics, before migration 11. */
export async function removeStatisticsBefore11(tenant: string, sql: Sql, rowids: readonly number[]): Promise<void> {
  if (rowids.length === 0) return;
  const removed = `SELECT field, lexeme, count(*)::int AS n FROM lexical_postings
     WHERE raw_node_rowid = ANY($2::bigint[]) GROUP BY field, lexeme`;
  await sql.query(
    `DELETE FROM lexical_terms t USING (${removed}) r
     WHERE t.tenant = $1 AND t.field = r.field AND t.lexeme = r.lexeme AND t.df <= r.n`,
    [tenant, rowids],
  );
  await sql.query(
    `UPDATE lexical_terms t SET df = t.df - r.n FROM (${removed} ORDER BY 1, 2) r
     WHERE t.tenant = $1 AND t.field = r.field AND t.lexeme = r.lexeme`,
    [tenant, rowids],
  );
  await sql.query(
    `UPDATE lexical_stats s SET docs = s.docs - r.docs, total_length = s.total_length - r.total_length
     FROM (SELECT field, count(*) AS docs, sum(length) AS total_length FROM lexical_docs
           WHERE raw_node_rowid = ANY($2::bigint[]) GROUP BY field) r
     WHERE s.tenant = $1 AND s.field = r.field`,
    [tenant, rowids],
  );
}
