import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";
import { type SpaceRow, textOrdinal, vectorFromSend } from "./vector-spaces.ts";

/** Stored text vectors of this scope's raw nodes in one space; missing, foreign and vectorless ones are omitted. */
export async function readVectors(
  context: ScopeContext,
  sql: Sql,
  space: SpaceRow,
  rawNodeIds: readonly string[],
): Promise<Map<string, Float32Array>> {
  if (rawNodeIds.length === 0) return new Map();
  const rows = await sql.query<{ id: string; embedding: Buffer }>(
    `SELECT r.id, vector_send(v.embedding) AS embedding FROM raw_nodes r
     JOIN ${space.table_name} v ON v.raw_node_rowid = r.rowid AND v.ordinal = $3
     WHERE r.scope_key || '' = $1 AND r.id = ANY($2::text[])`,
    [context.key, rawNodeIds, textOrdinal],
  );
  return new Map(rows.map((row) => [row.id, vectorFromSend(row.embedding)]));
}
