import { CairnError, InputError, StoreError } from "../../core/errors.ts";
import { vectorBytes } from "../../core/vectors.ts";
import { checkReplacementCoversScope } from "../record-rows.ts";
import type { VectorReplacement } from "../records.ts";
import { writeAudit } from "./audit-events.ts";
import type { ScopeContext } from "./scope-context.ts";
import { imageSlots, plainTableOf, type VectorRow, vectorTableOf } from "./vector-rows.ts";

/**
 * Replaces every vector of one scope in one transaction (`ScopedStore.replaceVectors`): the scope's
 * vec0 partitions are emptied in every space, the new vectors written in their declared spaces with
 * the raw nodes' partition columns, image vectors cached per blob, the index marked for a rebuild
 * and the audit event written. Raw nodes, blobs and FTS rows are only read. The ANN indexes follow
 * as after a forget (the scope's persisted files go first) and a commit.
 */
export function replaceVectors(context: ScopeContext, write: VectorReplacement): { vectors: number } {
  const { db, key, store } = context;
  const removed: { table: string; rowids: number[] }[] = [];
  const inserted: VectorRow[] = [];
  try {
    db.transaction(() => {
      const nodes = db
        .prepare(
          `SELECT r.id, r.rowid, r.session_rowid, r.time_ms, r.speaker,
             (SELECT json_group_array(i.blob_hash) FROM (SELECT blob_hash FROM raw_node_images
               WHERE raw_node_rowid = r.rowid ORDER BY ordinal) i) AS hashes
           FROM raw_nodes r WHERE r.scope_key = ?`,
        )
        .all(key) as {
        id: string;
        rowid: number;
        session_rowid: number;
        time_ms: number;
        speaker: string | null;
        hashes: string;
      }[];
      const byId = new Map(nodes.map((node) => [node.id, node]));
      checkReplacementCoversScope(write, new Set(byId.keys()));

      const spaces = store.spaces();
      store.vectorIndexes.beforeForget(key, spaces.map(vectorTableOf));
      for (const space of spaces) {
        const rowids = db
          .prepare(`SELECT rowid FROM ${space.table_name} WHERE scope_key = ?`)
          .pluck()
          .all(key) as number[];
        if (rowids.length === 0) continue;
        // The plain copy (exact scoring, decision 015) goes with its vec0 rows.
        for (const table of [space.table_name, plainTableOf(space.table_name)]) {
          db.prepare(`DELETE FROM ${table} WHERE rowid IN (SELECT value FROM json_each(?))`).run(
            JSON.stringify(rowids),
          );
        }
        removed.push({ table: space.table_name, rowids });
      }
      const tables = new Map(write.spaces.map((space) => [space.name, store.ensureSpace(space)]));
      const insert = (space: string, rowid: number, vector: Float32Array, node: (typeof nodes)[number]) => {
        const table = tables.get(space);
        if (!table) throw new InputError("spaces", `a vector for undeclared space ${space}`);
        db.prepare(
          `INSERT INTO ${table} (rowid, scope_key, session_rowid, time_ms, speaker, embedding) VALUES (?, ?, ?, ?, ?, ?)`,
        ).run(BigInt(rowid), key, BigInt(node.session_rowid), BigInt(node.time_ms), node.speaker ?? "", vector);
        db.prepare(`INSERT INTO ${plainTableOf(table)} (rowid, embedding) VALUES (?, ?)`).run(BigInt(rowid), vector);
        inserted.push({ table, rowid, vector });
      };
      const cache = db.prepare(
        "INSERT OR IGNORE INTO blob_vectors (tenant, blob_hash, space, vector) VALUES (?, ?, ?, ?)",
      );
      for (const replacement of write.rawNodes) {
        const node = byId.get(replacement.rawNodeId);
        if (!node) continue;
        for (const [space, vector] of Object.entries(replacement.textVectors)) insert(space, node.rowid, vector, node);
        const hashes = JSON.parse(node.hashes) as (string | null)[];
        replacement.imageVectors.forEach((vectors, ordinal) => {
          if (ordinal >= hashes.length)
            throw new InputError("imageVectors", `raw node ${node.id} has ${hashes.length} image(s)`);
          for (const [space, vector] of Object.entries(vectors)) {
            insert(space, node.rowid * imageSlots + ordinal, vector, node);
            const hash = hashes[ordinal];
            if (hash) cache.run(context.tenantStorage.token, hash, space, vectorBytes(vector));
          }
        });
      }
      // The entries still hold vectors of the old models: the next read (or the caller) rebuilds them.
      db.prepare(
        `INSERT INTO index_state (scope_key, version, needs_rebuild) VALUES (?, 1, 1)
         ON CONFLICT (scope_key) DO UPDATE SET version = version + 1, needs_rebuild = 1`,
      ).run(key);
      writeAudit(context, write.audit.action, write.audit.subject, {
        ...write.audit.details,
        vectors: inserted.length,
      });
    }).immediate();
  } catch (error) {
    // Rolled back: the loaded indexes still match the rows (their persisted files are gone, rebuilt when next needed).
    if (CairnError.is(error)) throw error;
    throw new StoreError("replaceVectors", error);
  }
  store.vectorIndexes.afterForget(key, removed);
  store.vectorIndexes.afterCommit(key, inserted);
  return { vectors: inserted.length };
}
