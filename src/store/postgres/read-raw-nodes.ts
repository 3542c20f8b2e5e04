import type pg from "pg";
import { type ImageRow, type RawNodeRow, rawNodeColumns, toImageRef, toRawNode } from "../record-rows.ts";
import type { ImageRef, RawNode } from "../records.ts";
import type { RawNodeQuery } from "../store.ts";
import type { ScopeContext } from "./scope-context.ts";
import { readAllInOneTrip, type Sql } from "./tenant-transaction.ts";

/**
 * Raw nodes of one scope, with their images: a foreign id reads exactly like a missing one. By id,
 * `scope_key || ''` keeps the planner on the id index (a new scope is estimated at a row or two,
 * and it would rather walk the scope); the scope is bound either way.
 */
export async function readRawNodes(context: ScopeContext, sql: Sql, query: RawNodeQuery): Promise<RawNode[]> {
  if ("ids" in query) {
    if (query.ids.length === 0) return [];
    const rows = await sql.query<RawNodeRow>(
      `SELECT ${rawNodeColumns} FROM raw_nodes r JOIN sessions s ON s.rowid = r.session_rowid
       WHERE r.scope_key || '' = $1 AND r.id = ANY($2::text[])`,
      [context.key, query.ids],
    );
    const byId = new Map((await withImages(sql, rows)).map((node) => [node.id, node]));
    return query.ids.flatMap((id) => byId.get(id) ?? []);
  }
  if ("sessionId" in query) {
    const rows = await sql.query<RawNodeRow>(
      `SELECT ${rawNodeColumns} FROM raw_nodes r JOIN sessions s ON s.rowid = r.session_rowid
       WHERE r.scope_key = $1 AND s.id = $2 ORDER BY r.turn`,
      [context.key, query.sessionId],
    );
    return withImages(sql, rows);
  }
  if (query.near.length === 0) return [];
  // Raw nodes within `window` turns of the given ones in the same session, the given ones excluded.
  const rows = await sql.query<RawNodeRow>(
    `SELECT DISTINCT ${rawNodeColumns} FROM raw_nodes g
     JOIN raw_nodes r ON r.session_rowid = g.session_rowid AND r.turn BETWEEN g.turn - $3 AND g.turn + $3
     JOIN sessions s ON s.rowid = r.session_rowid
     WHERE g.scope_key = $1 AND r.scope_key = $1 AND g.id = ANY($2::text[]) AND NOT (r.id = ANY($2::text[]))
     ORDER BY r.session_rowid, r.turn`,
    [context.key, query.near, query.window],
  );
  return withImages(sql, rows);
}

/**
 * `readRawNodes({ ids })` in one round trip: the raw nodes and their images as two statements of
 * one snapshot (the images' statement finds the same raw nodes again by id), with the opening and
 * the COMMIT (a routed search reads its best candidates this way).
 */
export async function readRawNodesByIdInOneTrip(
  context: ScopeContext,
  pool: pg.Pool,
  ids: readonly string[],
): Promise<RawNode[]> {
  if (ids.length === 0) return [];
  const [rows, images] = (await readAllInOneTrip(pool, context.tenant, "readRawNodes", [
    {
      text: `SELECT ${rawNodeColumns} FROM raw_nodes r JOIN sessions s ON s.rowid = r.session_rowid
       WHERE r.scope_key || '' = $1 AND r.id = ANY($2::text[])`,
      values: [context.key, ids],
    },
    {
      text: `SELECT ${imageColumns}
       FROM raw_node_images i LEFT JOIN blobs b ON b.tenant = i.tenant AND b.hash = i.blob_hash
       WHERE i.raw_node_rowid = ANY(ARRAY(SELECT rowid FROM raw_nodes WHERE scope_key || '' = $1 AND id = ANY($2::text[])))
       ORDER BY i.raw_node_rowid, i.ordinal`,
      values: [context.key, ids],
    },
  ])) as [RawNodeRow[], ImageRow[]];
  const byId = new Map(attachImages(rows, images).map((node) => [node.id, node]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** The rowids of this scope's raw nodes by id; missing and foreign ids are absent. */
export async function rawNodeRowids(
  context: ScopeContext,
  sql: Sql,
  ids: readonly string[],
): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map();
  const rows = await sql.query<{ rowid: number; id: string }>(
    "SELECT rowid, id FROM raw_nodes WHERE scope_key || '' = $1 AND id = ANY($2::text[])",
    [context.key, ids],
  );
  return new Map(rows.map((row) => [row.id, row.rowid]));
}

const imageColumns = `i.raw_node_rowid, i.ordinal, i.blob_hash, i.caption, i.derived_text, i.origin,
            b.media_type, b.bytes, b.width, b.height`;

async function withImages(sql: Sql, rows: readonly RawNodeRow[]): Promise<RawNode[]> {
  if (rows.length === 0) return [];
  const images = await sql.query<ImageRow>(
    `SELECT ${imageColumns}
     FROM raw_node_images i LEFT JOIN blobs b ON b.tenant = i.tenant AND b.hash = i.blob_hash
     WHERE i.raw_node_rowid = ANY($1::bigint[]) ORDER BY i.raw_node_rowid, i.ordinal`,
    [rows.map((row) => row.rowid)],
  );
  return attachImages(rows, images);
}

function attachImages(rows: readonly RawNodeRow[], images: readonly ImageRow[]): RawNode[] {
  const byNode = new Map<number, ImageRef[]>();
  for (const image of images) {
    const list = byNode.get(image.raw_node_rowid) ?? [];
    list.push(toImageRef(image));
    byNode.set(image.raw_node_rowid, list);
  }
  return rows.map((row) => toRawNode(row, byNode.get(row.rowid) ?? []));
}
