import type { VectorIndex } from "../vector-index.ts";
import { VectorIndexFiles } from "./vector-index-manifest.ts";
import type { VectorRow, VectorTable } from "./vector-rows.ts";

export type PendingChange =
  | { readonly kind: "upsert"; readonly row: VectorRow }
  | { readonly kind: "remove"; readonly rowids: readonly number[] };

/** One (vector space, scope) partition of vec0 and what this process holds of its ANN index. */
export interface VectorPartition {
  readonly table: VectorTable;
  readonly scopeKey: string;
  readonly files: VectorIndexFiles;
  estimate: number | undefined;
  index: VectorIndex | undefined;
  building: Promise<void> | undefined;
  /** Changes committed while a build runs, replayed onto its result. */
  pending: PendingChange[];
  /** The loaded index holds rows its persisted file lacks. */
  dirty: boolean;
  /**
   * Rows were removed from the loaded index. usearch keeps a removed vector's bytes in place, so such
   * an index is never written to disk: the next process rebuilds it from vec0 instead.
   */
  tainted: boolean;
  /** Bumped whenever the partition is reset, so a build started before the reset is thrown away. */
  epoch: number;
  error: string | null;
}

export function newVectorPartition(folder: string, table: VectorTable, scopeKey: string): VectorPartition {
  return {
    table,
    scopeKey,
    files: new VectorIndexFiles(folder, table.table, scopeKey),
    estimate: undefined,
    index: undefined,
    building: undefined,
    pending: [],
    dirty: false,
    tainted: false,
    epoch: 0,
    error: null,
  };
}

/** The key of a partition in the registry: a NUL cannot occur in a table name or a scope key. */
export function partitionKey(table: string, scopeKey: string): string {
  return `${table}\u0000${scopeKey}`;
}

/**
 * Forgets what was loaded or counted, after another connection committed: the loaded index may miss
 * its rows (or hold ones it forgot), and a build running now started from a snapshot that is stale.
 */
export function resetPartition(partition: VectorPartition): void {
  partition.epoch++;
  partition.index = undefined;
  partition.estimate = undefined;
  partition.dirty = false;
  partition.tainted = false;
  partition.error = null;
}

/**
 * Runs an update of a loaded index. If it fails (out of memory, say), the index and its files go and
 * the partition is searched exactly; `status` reports why, and a new process builds afresh.
 */
export function updateOrDrop(partition: VectorPartition, update: (index: VectorIndex) => void): void {
  const { index } = partition;
  if (!index) return;
  try {
    update(index);
  } catch (error) {
    partition.index = undefined;
    partition.error = `vector index update failed: ${messageOf(error)}`;
    partition.files.remove();
  }
}

/** Replays the changes committed while a build ran; says whether any removed rows (tainting the index). */
export function replayPending(index: VectorIndex, pending: readonly PendingChange[]): { removed: boolean } {
  let removed = false;
  for (const change of pending) {
    if (change.kind === "upsert") upsertRows(index, [change.row]);
    else {
      index.remove(change.rowids);
      removed = true;
    }
  }
  return { removed };
}

export function upsertRows(index: VectorIndex, rows: readonly VectorRow[]): void {
  if (rows.length === 0) return;
  const vectors = new Float32Array(rows.length * index.dimensions);
  rows.forEach((row, position) => {
    vectors.set(row.vector, position * index.dimensions);
  });
  index.upsert(
    rows.map((row) => row.rowid),
    vectors,
  );
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
