import { vectorFromBytes } from "../../core/vectors.ts";
import type { IndexEntry } from "../index-records.ts";
import { readLinked } from "./index-rows.ts";
import { bytesOrUndefined, type NeighbourRow, type RowidIdRow } from "./record-rows.ts";
import type { ScopeContext } from "./scope-context.ts";

/** Look-ups over what was derived at write time: turn order, stored text vectors, linked index entries. */

/** Raw nodes within `window` turns of the given ones in the same session, each with the given node it is near. */
export function neighbours(context: ScopeContext, rawNodeIds: readonly string[], window: number): Map<string, string> {
  const rows = context.db
    .prepare(
      `SELECT n.id, r.id AS near FROM raw_nodes r
       JOIN raw_nodes n ON n.session_rowid = r.session_rowid AND n.turn BETWEEN r.turn - ? AND r.turn + ?
       WHERE r.scope_key = ? AND n.scope_key = ? AND r.id IN (SELECT value FROM json_each(?)) AND n.id != r.id`,
    )
    .all(window, window, context.key, context.key, JSON.stringify(rawNodeIds)) as NeighbourRow[];
  const out = new Map<string, string>();
  for (const row of rows) if (!out.has(row.id)) out.set(row.id, row.near);
  return out;
}

/** Stored text vectors of raw nodes in one space; missing ids are omitted. */
export function textVectors(
  context: ScopeContext,
  space: string,
  rawNodeIds: readonly string[],
): Map<string, Float32Array> {
  const table = context.store.spaces().find((row) => row.name === space)?.table_name;
  const out = new Map<string, Float32Array>();
  if (!table) return out;
  const rowids = context.db
    .prepare("SELECT rowid, id FROM raw_nodes WHERE scope_key = ? AND id IN (SELECT value FROM json_each(?))")
    .all(context.key, JSON.stringify(rawNodeIds)) as RowidIdRow[];
  const select = context.db.prepare(`SELECT embedding FROM ${table} WHERE rowid = ?`).pluck();
  for (const { rowid, id } of rowids) {
    const bytes = bytesOrUndefined(select.get(BigInt(rowid)));
    if (bytes) out.set(id, vectorFromBytes(bytes));
  }
  return out;
}

/** Entries hosted by `hosts` (overflow and merged) and entries named by `ids`, any status. */
export function linkedEntries(
  context: ScopeContext,
  options: { hosts: readonly string[]; ids: readonly string[]; nearest?: { vector: Float32Array; perHost: number } },
): IndexEntry[] {
  return readLinked(context.db, context.key, options);
}
