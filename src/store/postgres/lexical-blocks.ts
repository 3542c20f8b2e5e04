import type { BlockPostings } from "../lexical-block-max.ts";

/**
 * The lexical postings of the Postgres store as blocks (decision 034, migration 12): per scope,
 * field and term, rows of at most `lexicalBlockSize` postings in rowid order, keyed by
 * `block_start` (no rowid of the list's earlier blocks reaches it; none of later blocks is below
 * the next block's), each with its last rowid, its count, its largest tf and smallest document
 * length (BM25's block bound) and its postings as bytes: per posting the raw node's rowid (8
 * bytes), tf and the document's length (4 bytes each), big-endian — what `int8send`/`int4send`
 * make in SQL and a `DataView` reads here.
 *
 * Blocks are kept by statement-level triggers on `lexical_docs` (a document row holds its terms
 * and their frequencies), so whatever writes or deletes documents keeps them exact.
 */

/** Postings a block holds at most: big enough to amortise a row, small enough to skip cheaply. */
export const lexicalBlockSize = 128;

/** Bytes of one posting. */
export const postingBytes = 16;

/** One posting as bytes, and a block's bytes as rows: the two SQL functions the triggers use. */
export const lexicalBlockFunctions = `
  CREATE FUNCTION lexical_posting(r bigint, t integer, l integer) RETURNS bytea
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$ SELECT int8send(r) || int4send(t) || int4send(l) $f$;
  CREATE FUNCTION lexical_block_postings(p bytea) RETURNS TABLE (rowid bigint, tf integer, length integer)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
      SELECT ('x' || encode(substring(p FROM i * ${postingBytes} + 1 FOR 8), 'hex'))::bit(64)::bigint,
        ('x' || encode(substring(p FROM i * ${postingBytes} + 9 FOR 4), 'hex'))::bit(32)::integer,
        ('x' || encode(substring(p FROM i * ${postingBytes} + 13 FOR 4), 'hex'))::bit(32)::integer
      FROM generate_series(0, length(p) / ${postingBytes} - 1) AS i $f$;`;

const sameList = (a: string, b: string) =>
  `${a}.scope_key = ${b}.scope_key AND ${a}.field = ${b}.field AND ${a}.lexeme = ${b}.lexeme`;

/** Columns of a block row, and the aggregate making them from postings `rowid, tf, length, tenant`. */
const blockColumns = "scope_key, field, lexeme, block_start, tenant, last_rowid, n, max_tf, min_length, postings";
const blockAggregate = `min(rowid), min(tenant), max(rowid), count(*), max(tf), min(length),
  string_agg(lexical_posting(rowid, tf, length), ''::bytea ORDER BY rowid)`;

/**
 * The insert trigger's statement (transition table `added`). Per list of the new postings:
 * - when all its new rowids come after the list's last (a commit: writers of a scope take its lock
 *   before drawing rowids, so they come in order), the last block is filled up to the block size by
 *   appending bytes (`||`, no decoding) and the rest start new blocks of up to the block size;
 * - otherwise (a survivor's document written again after a forget), each new posting goes to the
 *   block whose range holds it (the first block when it precedes them all): those blocks are read,
 *   merged with it and written again, cut at the block size.
 * The two cases touch different lists, so one statement does both. A rewritten block's row is
 * deleted before its replacements are inserted (they may reuse its key): the replacements are
 * numbered by a window over its deleted rows, which reads them all first.
 */
export const addPostingsStatement = `
  WITH p AS (
    SELECT d.tenant, d.scope_key, d.field, u.lexeme, d.raw_node_rowid AS rowid, u.tf, d.length
    FROM added d, unnest(d.terms, d.tfs) AS u (lexeme, tf)
  ), lists AS (
    SELECT l.scope_key, l.field, l.lexeme, l.first, t.block_start, t.last_rowid, t.n
    FROM (SELECT scope_key, field, lexeme, min(rowid) AS first FROM p GROUP BY 1, 2, 3) l
    LEFT JOIN LATERAL (
      SELECT b.block_start, b.last_rowid, b.n FROM lexical_blocks b WHERE ${sameList("b", "l")}
      ORDER BY b.block_start DESC LIMIT 1
    ) t ON true
  ), appended AS (
    SELECT p.*, l.block_start AS tail,
      (row_number() OVER (PARTITION BY p.scope_key, p.field, p.lexeme ORDER BY p.rowid) - 1)
        - CASE WHEN l.block_start IS NULL THEN 0 ELSE ${lexicalBlockSize} - l.n END AS rank
    FROM p JOIN lists l ON ${sameList("l", "p")}
    WHERE l.last_rowid IS NULL OR l.first > l.last_rowid
  ), grown AS (
    UPDATE lexical_blocks b SET n = b.n + a.n, last_rowid = a.last, max_tf = greatest(b.max_tf, a.max_tf),
      min_length = least(b.min_length, a.min_length), postings = b.postings || a.postings
    FROM (
      SELECT scope_key, field, lexeme, tail, count(*)::int AS n, max(rowid) AS last, max(tf) AS max_tf,
        min(length) AS min_length, string_agg(lexical_posting(rowid, tf, length), ''::bytea ORDER BY rowid) AS postings
      FROM appended WHERE rank < 0 GROUP BY scope_key, field, lexeme, tail
    ) a
    WHERE ${sameList("b", "a")} AND b.block_start = a.tail
  ), started AS (
    INSERT INTO lexical_blocks (${blockColumns})
    SELECT scope_key, field, lexeme, ${blockAggregate}
    FROM appended WHERE rank >= 0 GROUP BY scope_key, field, lexeme, rank / ${lexicalBlockSize}
  ), late AS (
    SELECT p.*, coalesce(
        (SELECT b.block_start FROM lexical_blocks b WHERE ${sameList("b", "p")} AND b.block_start <= p.rowid
         ORDER BY b.block_start DESC LIMIT 1),
        (SELECT b.block_start FROM lexical_blocks b WHERE ${sameList("b", "p")} ORDER BY b.block_start LIMIT 1)
      ) AS owner
    FROM p JOIN lists l ON ${sameList("l", "p")}
    WHERE l.first <= l.last_rowid
  ), rewritten AS (
    DELETE FROM lexical_blocks b USING (SELECT DISTINCT scope_key, field, lexeme, owner FROM late) o
    WHERE ${sameList("b", "o")} AND b.block_start = o.owner
    RETURNING b.*
  ), merged AS (
    SELECT r.tenant, r.scope_key, r.field, r.lexeme, r.block_start AS owner, x.rowid, x.tf, x.length
    FROM rewritten r, lexical_block_postings(r.postings) x
    UNION ALL
    SELECT tenant, scope_key, field, lexeme, owner, rowid, tf, length FROM late
  ), pieces AS (
    SELECT m.*, (row_number() OVER (PARTITION BY scope_key, field, lexeme, owner ORDER BY rowid) - 1)
      / ${lexicalBlockSize} AS piece
    FROM merged m
  )
  INSERT INTO lexical_blocks (${blockColumns})
  SELECT scope_key, field, lexeme, ${blockAggregate}
  FROM pieces GROUP BY scope_key, field, lexeme, owner, piece;`;

/**
 * The delete trigger's statement (transition table `removed`): each block holding a removed
 * document's posting is deleted and, if any of its postings remain, written again without them
 * (keyed by its first remaining rowid). Nothing of a removed document stays in a block, its tf and
 * length not even in a block's bounds.
 */
export const dropPostingsStatement = `
  WITH g AS (
    SELECT d.scope_key, d.field, u.lexeme, d.raw_node_rowid AS rowid FROM removed d, unnest(d.terms) AS u (lexeme)
  ), owners AS (
    SELECT DISTINCT g.scope_key, g.field, g.lexeme,
      (SELECT b.block_start FROM lexical_blocks b WHERE ${sameList("b", "g")} AND b.block_start <= g.rowid
       ORDER BY b.block_start DESC LIMIT 1) AS owner
    FROM g
  ), rewritten AS (
    DELETE FROM lexical_blocks b USING owners o WHERE ${sameList("b", "o")} AND b.block_start = o.owner
    RETURNING b.*
  ), kept AS (
    SELECT r.tenant, r.scope_key, r.field, r.lexeme, r.block_start AS owner, x.rowid, x.tf, x.length
    FROM rewritten r, lexical_block_postings(r.postings) x
    WHERE NOT EXISTS (SELECT 1 FROM g WHERE ${sameList("g", "r")} AND g.rowid = x.rowid)
  )
  INSERT INTO lexical_blocks (${blockColumns})
  SELECT scope_key, field, lexeme, ${blockAggregate}
  FROM kept GROUP BY scope_key, field, lexeme, owner;`;

/**
 * The blocks of tenant $1 built again from its document rows (the repair path, `rebuildLexical`):
 * each list's postings in rowid order, cut every `lexicalBlockSize`. The tenant's blocks must be
 * gone first.
 */
export const rebuildBlocksStatement = `
  INSERT INTO lexical_blocks (${blockColumns})
  SELECT scope_key, field, lexeme, ${blockAggregate}
  FROM (
    SELECT d.tenant, d.scope_key, d.field, u.lexeme, d.raw_node_rowid AS rowid, u.tf, d.length,
      (row_number() OVER (PARTITION BY d.scope_key, d.field, u.lexeme ORDER BY d.raw_node_rowid) - 1)
        / ${lexicalBlockSize} AS piece
    FROM lexical_docs d, unnest(d.terms, d.tfs) AS u (lexeme, tf) WHERE d.tenant = $1
  ) p
  GROUP BY scope_key, field, lexeme, piece`;

/** A block's postings as arrays (the walk's `BlockPostings`). */
export function decodeBlock(bytes: Uint8Array): BlockPostings {
  const count = Math.floor(bytes.byteLength / postingBytes);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const docs = new Array<number>(count);
  const tfs = new Array<number>(count);
  const lengths = new Array<number>(count);
  for (let index = 0, offset = 0; index < count; index++, offset += postingBytes) {
    docs[index] = view.getUint32(offset) * 0x1_0000_0000 + view.getUint32(offset + 4);
    tfs[index] = view.getInt32(offset + 8);
    lengths[index] = view.getInt32(offset + 12);
  }
  return { docs, tfs, lengths };
}
