import { InputError } from "../../core/errors.ts";
import { vectorBytes } from "../../core/vectors.ts";
import { checkReplacementCoversScope } from "../record-rows.ts";
import type { VectorReplacement } from "../records.ts";
import { writeAudit } from "./audit-events.ts";
import { lockIndex, renewVectorGeneration } from "./index-rows.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";
import { textOrdinal, vectorLiteral } from "./vector-spaces.ts";

/**
 * Replaces every vector of one scope inside the caller's transaction (`ScopedStore.replaceVectors`):
 * the scope's rows in every space's table go, the new vectors are written in their declared spaces
 * with the raw nodes' columns, image vectors cached per blob, the index marked for a rebuild and
 * the audit event written. Raw nodes, blobs and lexical rows are only read.
 */
export async function replaceVectors(
  context: ScopeContext,
  sql: Sql,
  write: VectorReplacement,
): Promise<{ vectors: number }> {
  // The index lock first, as every writer of the scope takes it: plans made against the old version fail.
  await lockIndex(context, sql);
  const nodes = await sql.query<{
    id: string;
    rowid: number;
    session_rowid: number;
    time_ms: number;
    speaker: string | null;
    hashes: (string | null)[];
  }>(
    `SELECT r.id, r.rowid, r.session_rowid, r.time_ms, r.speaker,
       coalesce((SELECT array_agg(i.blob_hash ORDER BY i.ordinal) FROM raw_node_images i
                 WHERE i.raw_node_rowid = r.rowid), '{}') AS hashes
     FROM raw_nodes r WHERE r.scope_key = $1`,
    [context.key],
  );
  const byId = new Map(nodes.map((node) => [node.id, node]));
  checkReplacementCoversScope(write, new Set(byId.keys()));

  await renewVectorGeneration(context, sql);
  for (const space of await context.store.spaces.all(sql)) {
    await sql.query(`DELETE FROM ${space.table_name} WHERE scope_key = $1`, [context.key]);
  }
  const rows = new Map<string, { columns: unknown[][]; dimensions: number; table: string }>();
  for (const space of write.spaces) {
    const row = await context.store.spaces.ensure(sql, space);
    rows.set(space.name, { columns: [[], [], [], [], [], []], dimensions: row.dimensions, table: row.table_name });
  }
  const cached: [string, string, Buffer][] = [];
  const add = (space: string, node: (typeof nodes)[number], ordinal: number, vector: Float32Array) => {
    const target = rows.get(space);
    if (!target) throw new InputError("spaces", `a vector for undeclared space ${space}`);
    const values = [node.rowid, ordinal, node.session_rowid, node.time_ms, node.speaker, vectorLiteral(vector)];
    for (const [index, value] of values.entries()) target.columns[index]?.push(value);
  };
  let count = 0;
  for (const replacement of write.rawNodes) {
    const node = byId.get(replacement.rawNodeId);
    if (!node) continue;
    for (const [space, vector] of Object.entries(replacement.textVectors)) add(space, node, textOrdinal, vector);
    replacement.imageVectors.forEach((vectors, ordinal) => {
      if (ordinal >= node.hashes.length)
        throw new InputError("imageVectors", `raw node ${node.id} has ${node.hashes.length} image(s)`);
      for (const [space, vector] of Object.entries(vectors)) {
        add(space, node, ordinal, vector);
        const hash = node.hashes[ordinal];
        if (hash) cached.push([hash, space, Buffer.from(vectorBytes(vector))]);
      }
    });
  }
  for (const { columns, dimensions, table } of rows.values()) {
    if ((columns[0]?.length ?? 0) === 0) continue;
    count += columns[0]?.length ?? 0;
    await sql.query(
      `INSERT INTO ${table} (raw_node_rowid, ordinal, tenant, scope_key, session_rowid, time_ms, speaker, embedding)
       SELECT v.rowid, v.ordinal, $1, $2, v.session_rowid, v.time_ms, v.speaker, v.embedding::vector(${dimensions})
       FROM unnest($3::bigint[], $4::int[], $5::bigint[], $6::bigint[], $7::text[], $8::text[])
         AS v (rowid, ordinal, session_rowid, time_ms, speaker, embedding)`,
      [context.tenant, context.key, ...columns],
    );
  }
  if (cached.length > 0) {
    await sql.query(
      `INSERT INTO blob_vectors (tenant, blob_hash, space, vector)
       SELECT DISTINCT ON (c.hash, c.space) $1, c.hash, c.space, c.vector
       FROM unnest($2::text[], $3::text[], $4::bytea[]) AS c (hash, space, vector)
       ON CONFLICT (tenant, blob_hash, space) DO NOTHING`,
      [context.tenant, cached.map((row) => row[0]), cached.map((row) => row[1]), cached.map((row) => row[2])],
    );
  }
  // The entries still hold vectors of the old models: the next read (or the caller) rebuilds them.
  await sql.query("UPDATE index_state SET version = version + 1, needs_rebuild = true WHERE scope_key = $1", [
    context.key,
  ]);
  await writeAudit(context, sql, write.audit.action, write.audit.subject, { ...write.audit.details, vectors: count });
  return { vectors: count };
}
