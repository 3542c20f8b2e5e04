/** Checks of the Postgres store's lexical blocks against their documents, run as a superuser (decision 034). */

/** Every posting held in a block, as a row. */
export const blockPostings = `(SELECT b.tenant, b.scope_key, b.field, b.lexeme, x.rowid AS raw_node_rowid, x.tf, x.length
  FROM lexical_blocks b, lexical_block_postings(b.postings) x) AS p`;

/**
 * Blocks that break their shape: a count, last rowid or bound that is not their postings', more
 * than the block size, postings out of order, or a range reaching into the next block's.
 */
export const blocksOutOfShape = `
  (SELECT b.scope_key, b.lexeme, b.block_start FROM lexical_blocks b
   CROSS JOIN LATERAL (SELECT count(*) AS n, max(rowid) AS last, min(rowid) AS first, max(tf) AS max_tf,
     min(length) AS min_length, bool_and(rowid > prev) AS ascending
     FROM (SELECT x.*, lag(x.rowid, 1, -1::bigint) OVER (ORDER BY ordinality) AS prev
           FROM lexical_block_postings(b.postings) WITH ORDINALITY x) y) x
   LEFT JOIN LATERAL (SELECT c.block_start FROM lexical_blocks c WHERE c.scope_key = b.scope_key AND c.field = b.field
     AND c.lexeme = b.lexeme AND c.block_start > b.block_start ORDER BY c.block_start LIMIT 1) nextb ON true
   WHERE x.n <> b.n OR b.n > 128 OR x.last <> b.last_rowid OR x.max_tf <> b.max_tf OR x.min_length <> b.min_length
     OR NOT x.ascending OR b.last_rowid >= coalesce(nextb.block_start, 9223372036854775807))`;

/** Postings that are not their document's terms, and terms of a document without their posting: none, when in step. */
export const postingsOutOfStep = `
  (SELECT d.tenant, d.scope_key, d.field, u.lexeme, d.raw_node_rowid, u.tf, d.length
   FROM lexical_docs d, unnest(d.terms, d.tfs) AS u (lexeme, tf)
   EXCEPT ALL SELECT tenant, scope_key, field, lexeme, raw_node_rowid, tf, length FROM ${blockPostings})
  UNION ALL
  (SELECT tenant, scope_key, field, lexeme, raw_node_rowid, tf, length FROM ${blockPostings}
   EXCEPT ALL SELECT d.tenant, d.scope_key, d.field, u.lexeme, d.raw_node_rowid, u.tf, d.length
   FROM lexical_docs d, unnest(d.terms, d.tfs) AS u (lexeme, tf))`;
