import { vectorFromBytes } from "../../core/vectors.ts";
import type { IndexEntry } from "../index-records.ts";
import { readLinked } from "./index-rows.ts";
import { bytesOrUndefined } from "./record-rows.ts";
import type { ScopeContext } from "./scope-context.ts";
import { statement } from "./statements.ts";
import { plainTableOf } from "./vector-rows.ts";

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
  // The plain copy, not vec0: a B-tree seek per vector instead of a walk through vec0's chunk BLOB.
  const rows = statement(
    context.db,
    `SELECT r.id, v.embedding FROM raw_nodes r JOIN ${plainTableOf(table)} v ON v.rowid = r.rowid
     WHERE r.id IN (SELECT value FROM json_each(?)) AND +r.scope_key = ?`,
  ).all(JSON.stringify(rawNodeIds), context.key) as { id: string; embedding: Uint8Array }[];
  for (const { id, embedding } of rows) {
    const bytes = bytesOrUndefined(embedding);
    if (bytes) out.set(id, vectorFromBytes(bytes));
  }
  return out;
}

/** Entries hosted by `hosts` (overflow and merged) and entries named by `ids`, any status. */
export function linkedEntries(
  context: ScopeContext,
  options: { hosts: readonly string[]; ids: readonly string[] },
): IndexEntry[] {
  return readLinked(context.db, context.key, options);
}
