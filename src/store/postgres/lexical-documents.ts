import { hasCjk, lexicalDocument } from "../lexical-text.ts";
import { addLexicalStatistics, removeLexicalStatistics } from "./lexical-statistics.ts";
import { textSearchConfig } from "./lexical-terms.ts";
import type { Sql } from "./tenant-transaction.ts";

/**
 * Inserts lexical documents (raw-node text or image-derived text, already as `lexicalDocument`
 * makes it) of one scope: one `lexical_docs` row and its postings per document. The caller adds
 * them to the tenant's statistics. A document's length is its number of term occurrences (stop
 * words are not terms).
 */
export async function insertLexicalDocuments(
  sql: Sql,
  scope: { readonly tenant: string; readonly key: string },
  documents: {
    readonly rowids: readonly unknown[];
    readonly fields: readonly unknown[];
    readonly bodies: readonly unknown[];
  },
): Promise<void> {
  await sql.query(
    `WITH ${lexicalDocumentsParts("unnest($3::bigint[], $4::text[], $5::text[]) AS x (rowid, field, body)", "$1", "$2")}
     SELECT 1`,
    [scope.tenant, scope.key, documents.rowids, documents.fields, documents.bodies],
  );
}

/**
 * The parts of a statement (`WITH` items, the first named `lexical_terms_of`) that insert lexical
 * documents and their postings: `source` is a FROM item with columns `rowid`, `field` and `body`
 * named `x`; `tenant` and `scope` are SQL expressions. Each insert runs to completion whether or
 * not the statement reads it.
 */
export function lexicalDocumentsParts(source: string, tenant: string, scope: string): string {
  return `lexical_terms_of AS (
       SELECT x.rowid, x.field, to_tsvector('${textSearchConfig}', x.body) AS terms
       FROM ${source}
     ), lexical_documents AS (
       SELECT rowid, field, terms,
         coalesce((SELECT sum(array_length(u.positions, 1)) FROM unnest(terms) u), 0)::int AS length
       FROM lexical_terms_of
     ), lexical_docs_rows AS (
       INSERT INTO lexical_docs (raw_node_rowid, field, tenant, scope_key, length)
       SELECT rowid, field, ${tenant}, ${scope}, length FROM lexical_documents
     ), lexical_postings_rows AS (
       INSERT INTO lexical_postings (scope_key, field, lexeme, raw_node_rowid, tenant, tf, length)
       SELECT ${scope}, d.field, u.lexeme, d.rowid, ${tenant}, array_length(u.positions, 1), d.length
       FROM lexical_documents d, unnest(d.terms) u
     )`;
}

/**
 * Migration 6: documents written before CJK runs were indexed as bigrams (`lexical-text.ts`) are
 * indexed again, tenant by tenant inside its wall, with the tenant's statistics kept in step. Only
 * raw nodes whose text or image-derived text holds a CJK character are touched, and only their
 * lexical rows; the raw nodes are only read.
 */
export async function reindexCjkDocuments(sql: Sql): Promise<void> {
  await sql.query("SELECT set_config('cairn.list_scopes', 'on', true)");
  const tenants = (await sql.query<{ tenant: string }>("SELECT DISTINCT tenant FROM scopes ORDER BY tenant")).map(
    (row) => row.tenant,
  );
  await sql.query("SELECT set_config('cairn.list_scopes', 'off', true)");
  for (const tenant of tenants) {
    await sql.query("SELECT set_config('cairn.tenant', $1, true)", [tenant]);
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
    if (changed.size === 0) continue;
    const rowids = [...new Set([...changed.values()].flatMap((documents) => documents.rowids))];
    await removeLexicalStatistics({ tenant }, sql, rowids);
    await sql.query("DELETE FROM lexical_postings WHERE raw_node_rowid = ANY($1::bigint[])", [rowids]);
    await sql.query("DELETE FROM lexical_docs WHERE raw_node_rowid = ANY($1::bigint[])", [rowids]);
    for (const [key, documents] of changed) await insertLexicalDocuments(sql, { tenant, key }, documents);
    await addLexicalStatistics({ tenant }, sql, rowids);
  }
  await sql.query("SELECT set_config('cairn.tenant', '', true)");
}
