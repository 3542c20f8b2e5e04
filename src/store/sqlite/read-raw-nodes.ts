import { type ImageRow, type RawNodeRow, rawNodeColumns, toImageRef, toRawNode } from "../record-rows.ts";
import type { ImageRef, RawNode } from "../records.ts";
import type { RawNodeQuery } from "../store.ts";
import { numberOrUndefined } from "./record-rows.ts";
import type { ScopeContext } from "./scope-context.ts";
import { statement } from "./statements.ts";

/** Raw nodes of one scope, with their images: a foreign id reads exactly like a missing one. */
export function readRawNodes(context: ScopeContext, query: RawNodeQuery): RawNode[] {
  if ("ids" in query) return getRawNodes(context, query.ids);
  if ("sessionId" in query) return listRawNodes(context, query);
  return nearRawNodes(context, query.near, query.window);
}

/** Raw nodes within `window` turns of the given ones in the same session, the given ones excluded; by session and turn. */
function nearRawNodes(context: ScopeContext, ids: readonly string[], window: number): RawNode[] {
  if (ids.length === 0) return [];
  const rows = statement(
    context.db,
    `SELECT DISTINCT ${rawNodeColumns} FROM raw_nodes g
       JOIN raw_nodes r ON r.session_rowid = g.session_rowid AND r.turn BETWEEN g.turn - ? AND g.turn + ?
       JOIN sessions s ON s.rowid = r.session_rowid
       WHERE g.scope_key = ? AND r.scope_key = ? AND g.id IN (SELECT value FROM json_each(?))
         AND r.id NOT IN (SELECT value FROM json_each(?))
       ORDER BY r.session_rowid, r.turn`,
  ).all(window, window, context.key, context.key, JSON.stringify(ids), JSON.stringify(ids)) as RawNodeRow[];
  return withImages(context, rows);
}

/** Missing or foreign ids are omitted; order follows `ids`. */
function getRawNodes(context: ScopeContext, ids: readonly string[]): RawNode[] {
  if (ids.length === 0) return [];
  const rows = statement(
    context.db,
    // `+r.scope_key`: otherwise SQLite walks the scope's whole index (~15 ms at 100k) instead of the ids.
    `SELECT ${rawNodeColumns} FROM raw_nodes r JOIN sessions s ON s.rowid = r.session_rowid
       WHERE +r.scope_key = ? AND r.id IN (SELECT value FROM json_each(?))`,
  ).all(context.key, JSON.stringify(ids)) as RawNodeRow[];
  const byId = new Map(withImages(context, rows).map((node) => [node.id, node]));
  return ids.map((id) => byId.get(id)).filter((node): node is RawNode => node !== undefined);
}

function listRawNodes(context: ScopeContext, options: { sessionId: string }): RawNode[] {
  const rows = statement(
    context.db,
    `SELECT ${rawNodeColumns} FROM raw_nodes r JOIN sessions s ON s.rowid = r.session_rowid
       WHERE r.scope_key = ? AND s.id = ? ORDER BY r.turn`,
  ).all(context.key, options.sessionId) as RawNodeRow[];
  return withImages(context, rows);
}

/** The rowid of one of this scope's raw nodes, or undefined for a missing or foreign id. */
export function rawNodeRowid(context: ScopeContext, id: string): number | undefined {
  return numberOrUndefined(
    statement(context.db, "SELECT rowid FROM raw_nodes WHERE scope_key = ? AND id = ?", "pluck").get(context.key, id),
  );
}

function withImages(context: ScopeContext, rows: RawNodeRow[]): RawNode[] {
  if (rows.length === 0) return [];
  const images = statement(
    context.db,
    `SELECT i.*, b.media_type, b.bytes, b.width, b.height FROM raw_node_images i
       LEFT JOIN blobs b ON b.hash = i.blob_hash AND b.tenant = ?
       WHERE i.raw_node_rowid IN (SELECT value FROM json_each(?)) ORDER BY i.raw_node_rowid, i.ordinal`,
  ).all(context.tenantStorage.token, JSON.stringify(rows.map((row) => row.rowid))) as ImageRow[];
  const byNode = new Map<number, ImageRef[]>();
  for (const image of images) {
    const list = byNode.get(image.raw_node_rowid) ?? [];
    list.push(toImageRef(image));
    byNode.set(image.raw_node_rowid, list);
  }
  return rows.map((row) => toRawNode(row, byNode.get(row.rowid) ?? []));
}
