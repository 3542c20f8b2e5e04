import type { BlockPostings } from "../lexical-block-max.ts";
import { decodeVarintPostings } from "../posting-bytes.ts";

/**
 * The lexical postings of the Postgres store as blocks (decision 034, migration 12): per scope,
 * field and term, rows of at most `lexicalBlockSize` postings in rowid order, keyed by
 * `block_start` (no rowid of the list's earlier blocks reaches it; none of later blocks is below
 * the next block's), each with its last rowid, its count, its largest tf and smallest document
 * length (BM25's block bound) and its postings as bytes.
 *
 * How the postings are written (decision 039, migration 14): per posting three LEB128 varints,
 * the raw node's rowid as a delta from the posting before it (the block's first from 0, so a
 * block's bytes stand alone), its tf and the document's length: about 3 bytes a posting on the
 * perf corpus. Migration 12 wrote them fixed-width (the `"fixed"` coding, 16 bytes: rowid, tf,
 * length as `int8send`/`int4send` make them), of which a search fetched 5.3× more bytes.
 *
 * Blocks are kept by statement-level triggers on `lexical_docs` (a document row holds its terms
 * and their frequencies), so whatever writes or deletes documents keeps them exact.
 */

/** Postings a block holds at most: big enough to amortise a row, small enough to skip cheaply. */
export const lexicalBlockSize = 128;

/** How a block's postings are written as bytes: migration 12's fixed width, or varints since migration 14. */
export type PostingCoding = "fixed" | "varint";

/** Bytes of one posting in migration 12's fixed-width coding. */
const fixedPostingBytes = 16;

/**
 * Migration 12's two SQL functions: one posting as 16 bytes, and a block's bytes as rows.
 * Frozen with that migration; migration 14 keeps the decoder under another name while it
 * writes every block again, then drops both.
 */
export const fixedBlockFunctions = `
  CREATE FUNCTION lexical_posting(r bigint, t integer, l integer) RETURNS bytea
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$ SELECT int8send(r) || int4send(t) || int4send(l) $f$;
  CREATE FUNCTION lexical_block_postings(p bytea) RETURNS TABLE (rowid bigint, tf integer, length integer)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
      SELECT ('x' || encode(substring(p FROM i * ${fixedPostingBytes} + 1 FOR 8), 'hex'))::bit(64)::bigint,
        ('x' || encode(substring(p FROM i * ${fixedPostingBytes} + 9 FOR 4), 'hex'))::bit(32)::integer,
        ('x' || encode(substring(p FROM i * ${fixedPostingBytes} + 13 FOR 4), 'hex'))::bit(32)::integer
      FROM generate_series(0, length(p) / ${fixedPostingBytes} - 1) AS i $f$;`;

/**
 * A varint of `v` (bytes for 0 ≤ v < 2^49, the rest of the range by a loop, which refuses a negative `v`): each 7-bit group from
 * the lowest, all but the last with the high bit set, packed big-endian into an int8 and cut from
 * its send form, so the common case is one expression the planner inlines. (Not STRICT: the
 * planner inlines a strict function only when its body is strict, which a CASE is not, and a call
 * that is not inlined cost 18 µs a posting against 0.7 µs by an uncommitted probe: NULL reaches
 * the loop, which is strict.)
 */
function varintExpression(groups: number): string {
  const bytes = Array.from(
    { length: groups },
    (_, index) => `((((v >> ${7 * index}) & 127) | ${index < groups - 1 ? 128 : 0}) << ${8 * (groups - 1 - index)})`,
  );
  return `substring(int8send(${bytes.join(" | ")}) FROM ${9 - groups})`;
}

/**
 * Migration 14's SQL functions: `lexical_varint`, `lexical_posting(rowid, previous rowid or NULL,
 * tf, length)` and `lexical_block_postings(bytes)` → rows (rowid, tf, length), the decoder the
 * triggers, the exhaustive pass and `checkIndex` read blocks with.
 */
export const varintBlockFunctions = `
  CREATE FUNCTION lexical_varint_long(v bigint) RETURNS bytea
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $f$
    DECLARE
      out bytea := ''::bytea;
      rest bigint := v;
    BEGIN
      IF v < 0 THEN RAISE EXCEPTION 'lexical_varint: % is negative', v; END IF;
      WHILE rest >= 128 LOOP
        out := out || substring(int4send(((rest & 127) | 128)::integer) FROM 4);
        rest := rest >> 7;
      END LOOP;
      RETURN out || substring(int4send(rest::integer) FROM 4);
    END $f$;
  CREATE FUNCTION lexical_varint(v bigint) RETURNS bytea
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
      SELECT CASE
        WHEN v < 0 THEN lexical_varint_long(v)
        ${[1, 2, 3, 4, 5, 6, 7].map((groups) => `WHEN v < ${2 ** (7 * groups)} THEN ${varintExpression(groups)}`).join("\n        ")}
        ELSE lexical_varint_long(v) END $f$;
  CREATE FUNCTION lexical_posting(r bigint, previous bigint, t integer, l integer) RETURNS bytea
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
      SELECT lexical_varint(r - coalesce(previous, 0)) || lexical_varint(t) || lexical_varint(l) $f$;
  CREATE FUNCTION lexical_block_postings(p bytea) RETURNS TABLE (rowid bigint, tf integer, length integer)
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $f$
    DECLARE
      total integer := octet_length(p);
      pos integer := 0;
      part integer := 0;
      num bigint;
      shift integer;
      b integer;
      cur bigint := 0;
    BEGIN
      WHILE pos < total LOOP
        num := 0;
        shift := 0;
        LOOP
          -- A number cut short ends the postings: those before it are returned, and checkIndex counts them.
          IF pos >= total THEN RETURN; END IF;
          b := get_byte(p, pos);
          pos := pos + 1;
          num := num | ((b & 127)::bigint << shift);
          EXIT WHEN b < 128;
          shift := shift + 7;
        END LOOP;
        IF part = 0 THEN
          cur := cur + num;
        ELSIF part = 1 THEN
          tf := num;
        ELSE
          rowid := cur;
          length := num;
          RETURN NEXT;
        END IF;
        part := (part + 1) % 3;
      END LOOP;
    END $f$;`;

const sameList = (a: string, b: string) =>
  `${a}.scope_key = ${b}.scope_key AND ${a}.field = ${b}.field AND ${a}.lexeme = ${b}.lexeme`;

/** Columns of a block row. */
const blockColumns = "scope_key, field, lexeme, block_start, tenant, last_rowid, n, max_tf, min_length, postings";

/** One posting's bytes, from a row of `rowid, tf, length` (and, varint-coded, `previous`: the rowid before it in its block). */
const postingBytesOf = (coding: PostingCoding) =>
  coding === "fixed" ? "lexical_posting(rowid, tf, length)" : "lexical_posting(rowid, previous, tf, length)";

/** The aggregate making a block's columns from its postings `rowid, tf, length, tenant` (and `previous`). */
const blockAggregate = (coding: PostingCoding) => `min(rowid), min(tenant), max(rowid), count(*), max(tf), min(length),
  string_agg(${postingBytesOf(coding)}, ''::bytea ORDER BY rowid)`;

/**
 * The rows of `relation` passing `where`, varint-coded with each one's `previous`: the rowid before
 * it among the rows of its `group` (the block it goes to), else `first` (NULL: it starts the
 * block). Fixed-width postings need no neighbour: the relation as it is.
 */
function withPrevious(
  coding: PostingCoding,
  relation: string,
  where: string,
  group: string,
  first = "NULL::bigint",
): string {
  const filter = where ? ` WHERE ${where}` : "";
  if (coding === "fixed") return `${relation}${filter}`;
  return `(SELECT s.*, lag(s.rowid, 1, ${first}) OVER (PARTITION BY ${group} ORDER BY s.rowid) AS previous
    FROM ${relation} s${filter}) s`;
}

/**
 * The insert trigger's statement (transition table `added`). Per list of the new postings:
 * - when all its new rowids come after the list's last (a commit: writers of a scope take its lock
 *   before drawing rowids, so they come in order), the last block is filled up to the block size by
 *   appending bytes (`||`, no decoding: varint-coded, the first appended delta is from the block's
 *   last rowid) and the rest start new blocks of up to the block size;
 * - otherwise (a survivor's document written again after a forget), each new posting goes to the
 *   block whose range holds it (the first block when it precedes them all): those blocks are read,
 *   merged with it and written again, cut at the block size.
 * The two cases touch different lists, so one statement does both. A rewritten block's row is
 * deleted before its replacements are inserted (they may reuse its key): the replacements are
 * numbered by a window over its deleted rows, which reads them all first.
 */
export function addPostingsStatement(coding: PostingCoding): string {
  const list = "s.scope_key, s.field, s.lexeme";
  return `
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
    SELECT p.*, l.block_start AS tail,${coding === "varint" ? " l.last_rowid AS tail_last," : ""}
      (row_number() OVER (PARTITION BY p.scope_key, p.field, p.lexeme ORDER BY p.rowid) - 1)
        - CASE WHEN l.block_start IS NULL THEN 0 ELSE ${lexicalBlockSize} - l.n END AS rank
    FROM p JOIN lists l ON ${sameList("l", "p")}
    WHERE l.last_rowid IS NULL OR l.first > l.last_rowid
  ), grown AS (
    UPDATE lexical_blocks b SET n = b.n + a.n, last_rowid = a.last, max_tf = greatest(b.max_tf, a.max_tf),
      min_length = least(b.min_length, a.min_length), postings = b.postings || a.postings
    FROM (
      SELECT scope_key, field, lexeme, tail, count(*)::int AS n, max(rowid) AS last, max(tf) AS max_tf,
        min(length) AS min_length, string_agg(${postingBytesOf(coding)}, ''::bytea ORDER BY rowid) AS postings
      FROM ${withPrevious(coding, "appended", "rank < 0", list, "s.tail_last")}
      GROUP BY scope_key, field, lexeme, tail
    ) a
    WHERE ${sameList("b", "a")} AND b.block_start = a.tail
  ), started AS (
    INSERT INTO lexical_blocks (${blockColumns})
    SELECT scope_key, field, lexeme, ${blockAggregate(coding)}
    FROM ${withPrevious(coding, "appended", "rank >= 0", `${list}, s.rank / ${lexicalBlockSize}`)}
    GROUP BY scope_key, field, lexeme, rank / ${lexicalBlockSize}
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
  SELECT scope_key, field, lexeme, ${blockAggregate(coding)}
  FROM ${withPrevious(coding, "pieces", "", `${list}, s.owner, s.piece`)}
  GROUP BY scope_key, field, lexeme, owner, piece;`;
}

/**
 * The delete trigger's statement (transition table `removed`): each block holding a removed
 * document's posting is deleted and, if any of its postings remain, written again without them
 * (keyed by its first remaining rowid). Nothing of a removed document stays in a block, its tf and
 * length not even in a block's bounds.
 */
export function dropPostingsStatement(coding: PostingCoding): string {
  return `
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
  SELECT scope_key, field, lexeme, ${blockAggregate(coding)}
  FROM ${withPrevious(coding, "kept", "", "s.scope_key, s.field, s.lexeme, s.owner")}
  GROUP BY scope_key, field, lexeme, owner;`;
}

/** The two trigger functions on `lexical_docs` in a coding (`CREATE OR REPLACE`: migration 14 writes them again). */
export function blockTriggerFunctions(coding: PostingCoding): string {
  return `
      CREATE OR REPLACE FUNCTION lexical_docs_drop_postings() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        ${dropPostingsStatement(coding)}
        RETURN NULL;
      END $$;
      CREATE OR REPLACE FUNCTION lexical_docs_add_postings() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        ${addPostingsStatement(coding)}
        RETURN NULL;
      END $$;`;
}

/**
 * The blocks of tenant $1 built again from its document rows (the repair path, `rebuildLexical`):
 * each list's postings in rowid order, cut every `lexicalBlockSize`. The tenant's blocks must be
 * gone first.
 */
export const rebuildBlocksStatement = `
  INSERT INTO lexical_blocks (${blockColumns})
  SELECT scope_key, field, lexeme, ${blockAggregate("varint")}
  FROM ${withPrevious(
    "varint",
    `(SELECT d.tenant, d.scope_key, d.field, u.lexeme, d.raw_node_rowid AS rowid, u.tf, d.length,
      (row_number() OVER (PARTITION BY d.scope_key, d.field, u.lexeme ORDER BY d.raw_node_rowid) - 1)
        / ${lexicalBlockSize} AS piece
    FROM lexical_docs d, unnest(d.terms, d.tfs) AS u (lexeme, tf) WHERE d.tenant = $1)`,
    "",
    "s.scope_key, s.field, s.lexeme, s.piece",
  )}
  GROUP BY scope_key, field, lexeme, piece`;

/**
 * Migration 14, per tenant: every block's fixed-width postings (read by migration 12's decoder,
 * kept as `lexical_block_postings_fixed`) written again as varints; the row and its bounds stay.
 */
export const recodeBlocksStatement = `
  UPDATE lexical_blocks b SET postings = (
    SELECT string_agg(${postingBytesOf("varint")}, ''::bytea ORDER BY rowid)
    FROM (SELECT x.*, lag(x.rowid) OVER (ORDER BY x.rowid) AS previous FROM lexical_block_postings_fixed(b.postings) x) y
  )`;

/** A block's postings as arrays (the walk's `BlockPostings`). */
export function decodeBlock(bytes: Uint8Array): BlockPostings {
  return decodeVarintPostings(bytes, 3);
}
