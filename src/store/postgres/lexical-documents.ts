import { documentTerms } from "./lexical-terms.ts";
import type { Sql } from "./tenant-transaction.ts";

/** Lexical documents to insert, column by column (one position per document). */
export interface LexicalDocumentColumns {
  readonly rowids: readonly unknown[];
  readonly fields: readonly unknown[];
  readonly bodies: readonly string[];
}

/**
 * Separates a document's terms in the one text value that carries them to the server (a statement
 * cannot unnest an array of arrays of different lengths): a control character, which FTS5's
 * tokenizer never puts in a token.
 */
const termSeparator = "\u0001";

/**
 * Each body's terms cut here (`lexical-terms.ts`), as the columns a statement reads through
 * `lexicalDocumentsParts`: the terms joined by U+0001, their frequencies joined by commas, the length.
 */
export function termColumns(bodies: readonly string[]): { terms: string[]; tfs: string[]; lengths: number[] } {
  const documents = documentTerms(bodies);
  return {
    terms: documents.map((document) => document.terms.join(termSeparator)),
    tfs: documents.map((document) => document.tfs.join(",")),
    lengths: documents.map((document) => document.length),
  };
}

/**
 * Inserts lexical documents (raw-node text or image-derived text, already as `lexicalDocument`
 * makes it) of one scope: one `lexical_docs` row (with its terms and their frequencies) per
 * document; its postings follow by trigger. The caller adds them to the tenant's statistics. A document's length is
 * its number of tokens, as FTS5 counts them.
 */
export async function insertLexicalDocuments(
  sql: Sql,
  scope: { readonly tenant: string; readonly key: string },
  documents: LexicalDocumentColumns,
): Promise<void> {
  const { terms, tfs, lengths } = termColumns(documents.bodies);
  await sql.query(
    `WITH ${lexicalDocumentsParts(
      "unnest($3::bigint[], $4::text[], $5::text[], $6::text[], $7::int[]) AS x (rowid, field, terms, tfs, length)",
      "$1",
      "$2",
    )}
     SELECT 1`,
    [scope.tenant, scope.key, documents.rowids, documents.fields, terms, tfs, lengths],
  );
}

/**
 * The parts of a statement (`WITH` items) that insert lexical documents (their postings follow, by
 * trigger): `source` is a FROM item named `x` with columns `rowid`, `field`, and `terms`, `tfs` and
 * `length` as `termColumns` makes them; `tenant` and `scope` are SQL expressions. Each insert runs to
 * completion whether or not the statement reads it.
 *
 * A document row carries its terms (`terms`) and their frequencies (`tfs`, in step): the statistics
 * are counted from them, and the statement-level triggers of migration 12 (`lexical-blocks.ts`)
 * append its postings to their lists' blocks when it is inserted and take them out when it is
 * deleted (decision 034).
 */
export function lexicalDocumentsParts(source: string, tenant: string, scope: string): string {
  return `lexical_docs_rows AS (
       INSERT INTO lexical_docs (raw_node_rowid, field, tenant, scope_key, length, terms, tfs)
       SELECT x.rowid, x.field, ${tenant}, ${scope}, x.length, string_to_array(x.terms, chr(1)),
         string_to_array(x.tfs, ',')::int[]
       FROM ${source}
     )`;
}
