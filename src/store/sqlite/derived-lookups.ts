import { vectorFromBytes } from "../../core/vectors.ts";
import type { IndexEntry } from "../index-records.ts";
import { readLinked } from "./index-rows.ts";
import { bytesOrUndefined, type RowidIdRow } from "./record-rows.ts";
import type { ScopeContext } from "./scope-context.ts";

/** Look-ups over what was derived at write time: turn order, stored text vectors, linked index entries. */

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
