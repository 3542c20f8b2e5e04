import { lexicalBlockSize, rebuildBlocksStatement } from "./lexical-blocks.ts";
import type { Sql } from "./tenant-transaction.ts";

/**
 * `cairn check` on the Postgres store's lexical structures: each document row (`lexical_docs`,
 * which carries its terms and frequencies, decision 031) is the source, and its postings (in blocks,
 * decision 034, each block in shape) and the
 * tenant's BM25 statistics (`lexical_terms`, `lexical_stats`) must be exactly what its documents
 * make. Every comparison runs in the server and returns only differences, so the client's memory
 * does not grow with the tenant. Run inside the tenant's wall; the explicit `tenant = $1` keeps
 * each scan on the tenant's rows.
 */

/** Differences reported per tenant at most (each query asks for one more, to say that more exist). */
const maxProblemsPerCheck = 20;

export async function verifyLexical(sql: Sql, tenant: string): Promise<string[]> {
  const problems: string[] = [];
  const limit = maxProblemsPerCheck + 1;
  const report = (rows: readonly string[], what: string) => {
    problems.push(...rows.slice(0, maxProblemsPerCheck));
    if (rows.length > maxProblemsPerCheck) problems.push(`… and more ${what}`);
  };
  const totals = await sql.query<{ problem: string }>(
    `SELECT format('%s: statistics %s docs / %s tokens, its documents %s / %s', field,
              coalesce(s.docs, 0), coalesce(s.total_length, 0), coalesce(d.docs, 0), coalesce(d.total_length, 0)) AS problem
     FROM (SELECT field, docs, total_length FROM lexical_stats WHERE tenant = $1) s
     FULL JOIN (SELECT field, count(*) AS docs, sum(length) AS total_length FROM lexical_docs WHERE tenant = $1
                GROUP BY field) d USING (field)
     WHERE coalesce(s.docs, 0) <> coalesce(d.docs, 0) OR coalesce(s.total_length, 0) <> coalesce(d.total_length, 0)
     ORDER BY 1 LIMIT ${limit}`,
    [tenant],
  );
  report(
    totals.map((row) => row.problem),
    "statistics",
  );
  const terms = await sql.query<{ problem: string }>(
    `SELECT format('%s "%s": df %s, held by %s documents', field, lexeme, coalesce(t.df, 0), coalesce(c.n, 0)) AS problem
     FROM (SELECT field, lexeme, df FROM lexical_terms WHERE tenant = $1) t
     FULL JOIN (SELECT d.field, u.lexeme, count(*) AS n FROM lexical_docs d, unnest(d.terms) AS u (lexeme)
                WHERE d.tenant = $1 GROUP BY d.field, u.lexeme) c USING (field, lexeme)
     WHERE coalesce(t.df, 0) <> coalesce(c.n, 0)
     ORDER BY 1 LIMIT ${limit}`,
    [tenant],
  );
  report(
    terms.map((row) => row.problem),
    "term counts",
  );
  const shapes = await sql.query<{ problem: string }>(
    `SELECT format('%s document of raw node %s: %s terms, %s frequencies, length %s', d.field, d.raw_node_rowid,
              cardinality(d.terms), cardinality(d.tfs), d.length) AS problem
     FROM lexical_docs d LEFT JOIN raw_nodes r ON r.rowid = d.raw_node_rowid
     WHERE d.tenant = $1 AND (cardinality(d.terms) <> cardinality(d.tfs)
       OR d.length <> coalesce((SELECT sum(f) FROM unnest(d.tfs) AS f), 0)
       OR r.scope_key IS DISTINCT FROM d.scope_key)
     ORDER BY 1 LIMIT ${limit}`,
    [tenant],
  );
  report(
    shapes.map((row) => row.problem),
    "documents",
  );
  report(await postingProblems(sql, tenant, limit), "postings");
  report(await blockProblems(sql, tenant, limit), "blocks");
  return problems;
}

/**
 * The postings the documents of `tenant` say exist (`tenant` is an SQL expression: `$1` for one
 * tenant; the tests pass the row's own column to read every tenant): columns tenant, scope_key,
 * field, lexeme, raw_node_rowid, tf, length. `blockPostingsSql` is what the blocks hold, in the
 * same columns.
 */
export function documentPostingsSql(tenant: string): string {
  return `SELECT d.tenant, d.scope_key, d.field, u.lexeme, d.raw_node_rowid, u.tf, d.length
     FROM lexical_docs d, unnest(d.terms, d.tfs) AS u (lexeme, tf) WHERE d.tenant = ${tenant}`;
}

export function blockPostingsSql(tenant: string): string {
  return `SELECT b.tenant, b.scope_key, b.field, b.lexeme, p.rowid AS raw_node_rowid, p.tf, p.length
     FROM lexical_blocks b, lexical_block_postings(b.postings) p WHERE b.tenant = ${tenant}`;
}

/**
 * Blocks of `tenant` out of shape (decision 034): a count, last rowid, largest tf or smallest length
 * that is not their postings', more than the block size, postings not ascending, bytes other than
 * their postings' varints (decision 039: a number cut short, or bytes after the last posting), or a
 * range reaching the next block's key. A wrong bound would make the walk skip a
 * document. Columns: the block's (`b.*` as stored) and its postings' (`held_*`), `ascending`, `whole`
 * (its bytes are its postings' varints and nothing else), `next_start`.
 */
export function blocksOutOfShapeSql(tenant: string): string {
  return `SELECT b.field, b.lexeme, b.scope_key, b.block_start, b.n, b.last_rowid, b.max_tf, b.min_length,
       x.n AS held_n, x.last AS held_last, x.max_tf AS held_max_tf, x.min_length AS held_min_length, x.ascending,
       x.written = b.postings AS whole, nextb.block_start AS next_start
     FROM lexical_blocks b
     CROSS JOIN LATERAL (
       SELECT count(*) AS n, max(rowid) AS last, max(tf) AS max_tf, min(length) AS min_length,
         coalesce(bool_and(before IS NULL OR rowid > before), true) AS ascending,
         coalesce(string_agg(lexical_posting(rowid, before, tf, length), ''::bytea ORDER BY ordinality), ''::bytea)
           AS written
       FROM (SELECT p.*, lag(p.rowid) OVER (ORDER BY ordinality) AS before
             FROM lexical_block_postings(b.postings) WITH ORDINALITY p) y
     ) x
     LEFT JOIN LATERAL (
       SELECT c.block_start FROM lexical_blocks c
       WHERE c.scope_key = b.scope_key AND c.field = b.field AND c.lexeme = b.lexeme AND c.block_start > b.block_start
       ORDER BY c.block_start LIMIT 1
     ) nextb ON true
     WHERE b.tenant = ${tenant} AND (x.n <> b.n OR b.n > ${lexicalBlockSize} OR x.written <> b.postings
       OR x.last IS DISTINCT FROM b.last_rowid OR x.max_tf IS DISTINCT FROM b.max_tf
       OR x.min_length IS DISTINCT FROM b.min_length OR NOT x.ascending OR b.last_rowid >= nextb.block_start)`;
}

async function blockProblems(sql: Sql, tenant: string, limit: number): Promise<string[]> {
  const rows = await sql.query<{ problem: string }>(
    `SELECT format('%s "%s": the block from %s (%s postings, last %s, tf ≤ %s, length ≥ %s) holds %s postings, last %s, tf ≤ %s, length ≥ %s%s',
              field, lexeme, block_start, n, last_rowid, max_tf, min_length, held_n, held_last, held_max_tf,
              held_min_length, CASE WHEN NOT ascending THEN ', out of order' WHEN last_rowid >= next_start
              THEN ', reaching the next block' WHEN NOT whole THEN ', bytes past its postings' ELSE '' END) AS problem
     FROM (${blocksOutOfShapeSql("$1")}) shape ORDER BY 1 LIMIT ${limit}`,
    [tenant],
  );
  return rows.map((row) => row.problem);
}

/** Postings a document should have and lacks, and postings no document accounts for. */
async function postingProblems(sql: Sql, tenant: string, limit: number): Promise<string[]> {
  const expected = documentPostingsSql("$1");
  const stored = blockPostingsSql("$1");
  const rows = await sql.query<{ problem: string }>(
    `(SELECT format('%s "%s": raw node %s lacks its posting (tf %s, length %s)', field, lexeme, raw_node_rowid, tf, length) AS problem
      FROM (${expected} EXCEPT ALL ${stored}) missing LIMIT ${limit})
     UNION ALL
     (SELECT format('%s "%s": a posting of raw node %s (tf %s, length %s) no document accounts for', field, lexeme,
              raw_node_rowid, tf, length)
      FROM (${stored} EXCEPT ALL ${expected}) extra LIMIT ${limit})`,
    [tenant],
  );
  return rows.map((row) => row.problem);
}

/**
 * Builds the tenant's postings and statistics again from its document rows, in the caller's
 * transaction; the tenant's term rows are locked first, in the order writers take them.
 */
export async function rebuildLexical(sql: Sql, tenant: string): Promise<void> {
  await sql.query("SELECT 1 FROM lexical_terms WHERE tenant = $1 ORDER BY field, lexeme FOR UPDATE", [tenant]);
  await sql.query("SELECT 1 FROM lexical_stats WHERE tenant = $1 ORDER BY field FOR UPDATE", [tenant]);
  await sql.query("DELETE FROM lexical_blocks WHERE tenant = $1", [tenant]);
  await sql.query(rebuildBlocksStatement, [tenant]);
  await sql.query("DELETE FROM lexical_terms WHERE tenant = $1", [tenant]);
  await sql.query(
    `INSERT INTO lexical_terms (tenant, field, lexeme, df)
     SELECT $1, d.field, u.lexeme, count(*) FROM lexical_docs d, unnest(d.terms) AS u (lexeme)
     WHERE d.tenant = $1 GROUP BY d.field, u.lexeme`,
    [tenant],
  );
  await sql.query("DELETE FROM lexical_stats WHERE tenant = $1", [tenant]);
  await sql.query(
    `INSERT INTO lexical_stats (tenant, field, docs, total_length)
     SELECT $1, field, count(*), sum(length) FROM lexical_docs WHERE tenant = $1 GROUP BY field`,
    [tenant],
  );
}
