import type { Database } from "better-sqlite3";
import { StoreError } from "../../core/errors.ts";
import { scopeKey as keyOfScope, type Scope, validateScope } from "../../core/scope.ts";
import { type Neighbour, VectorIndex } from "../vector-index.ts";
import { defaultVectorIndexOptions, type VectorIndexOptions } from "../vector-index-options.ts";
import { DataVersionWatch } from "./data-version-watch.ts";
import { PartitionRows } from "./partition-rows.ts";
import { type BuiltIndex, PersistedIndexes } from "./persisted-indexes.ts";
import { buildInWorker } from "./vector-index-build.ts";
import { partitionStatus, type VectorIndexStatus } from "./vector-index-status.ts";
import {
  messageOf,
  newVectorPartition,
  partitionKey,
  replayPending,
  resetPartition,
  updateOrDrop,
  upsertRows,
  type VectorPartition,
} from "./vector-partition.ts";
import type { VectorRow, VectorTable } from "./vector-rows.ts";

/**
 * Approximate (HNSW) indexes over vec0 partitions, one per (vector space, scope), kept under
 * `<store>/ann/`. Derived data only: vec0 rows are the truth, and every index can be thrown away
 * and rebuilt from them. Searches on a partition under `minVectors`, or whose index is still being
 * built, return null and the caller scans vec0 exactly.
 *
 * Lifecycle of one partition's index: loaded from disk on first search if its manifest is valid
 * (then caught up with rows committed since), else built in a worker thread; once loaded, every
 * commit and forget of this process updates it; `close()` persists it. A forget deletes the
 * persisted files before its transaction commits, so no process can load an index holding a
 * forgotten row, and another connection's commit (seen through `PRAGMA data_version`) drops every
 * loaded index, to be reloaded and caught up from disk.
 */
export class VectorIndexes {
  readonly options: VectorIndexOptions;
  readonly #databasePath: string;
  readonly #folder: string;
  readonly #spaceTable: (space: string) => VectorTable | undefined;
  readonly #partitions = new Map<string, VectorPartition>();
  readonly #rows: PartitionRows;
  readonly #watch: DataVersionWatch;
  readonly #disk: PersistedIndexes;
  /** In a read worker: told of writes by the main thread instead of watching, and never writes files. */
  readonly #follower: boolean;
  /** How many times another connection's commit was noticed: read workers reset when it moves. */
  #externalWrites = 0;
  #listener: ((change: IndexChange) => void) | undefined;

  constructor(
    db: Database,
    options: {
      databasePath: string;
      folder: string;
      /** The vec0 table behind a vector space name, if the space exists. */
      spaceTable: (space: string) => VectorTable | undefined;
      options?: Partial<VectorIndexOptions>;
      /**
       * A read worker's registry (see read-pool.ts): it learns of commits and forgets from the main
       * thread (`afterCommit`, `afterForget`, `resetAll`) instead of `PRAGMA data_version`, which every
       * commit of the main thread's connection moves, and it never writes index files (its connection
       * is read-only). Searches on a partition it is still building stay exact, as on the main thread.
       */
      follower?: boolean;
    },
  ) {
    this.#follower = options.follower ?? false;
    this.#databasePath = options.databasePath;
    this.#folder = options.folder;
    this.#spaceTable = options.spaceTable;
    this.options = Object.freeze({ ...defaultVectorIndexOptions, ...options.options });
    this.#rows = new PartitionRows(db);
    this.#watch = new DataVersionWatch(db);
    this.#disk = new PersistedIndexes({
      folder: options.folder,
      hnsw: this.options.hnsw,
      maxCatchUp: this.options.maxCatchUp,
      rows: this.#rows,
      watch: this.#watch,
    });
  }

  /** The `k` nearest neighbours from the ANN index, or null when the caller should search vec0 exactly. */
  search(table: VectorTable, scopeKey: string, vector: Float32Array, k: number): Neighbour[] | null {
    this.#noticeExternalWrites();
    const partition = this.#partition(table, scopeKey);
    if (this.#estimate(partition) < this.options.minVectors) return null;
    if (!partition.index) this.#load(partition);
    return partition.index ? partition.index.search(vector, k) : null;
  }

  /**
   * Loads or builds a scope's index of one vector space now, whatever its size, and resolves once
   * searches use it. Searches never wait for a build; benchmarks and warm-up code can.
   * @example await store.vectorIndexes.ready("text:use-lite-512", { tenant: "acme", user: "ana" });
   */
  async ready(space: string, scope: Scope): Promise<void> {
    this.#noticeExternalWrites();
    const partition = this.#partitionOf(space, scope);
    if (!partition.index) this.#load(partition);
    await partition.building;
    if (!partition.index) {
      throw new StoreError(
        "vectorIndex",
        partition.error ?? "the index was reset while building (another connection wrote)",
      );
    }
  }

  status(space: string, scope: Scope): VectorIndexStatus {
    this.#noticeExternalWrites();
    const partition = this.#partitionOf(space, scope);
    return partitionStatus(partition, this.#estimate(partition));
  }

  /**
   * Called after a commit's transaction: loaded indexes take the new vectors at once. Never throws:
   * the commit has happened, and an index that cannot follow is dropped (rebuilt when next needed).
   */
  afterCommit(scopeKey: string, rows: readonly VectorRow[]): void {
    this.#listener?.({ kind: "commit", scopeKey, rows });
    for (const [table, tableRows] of groupBy(rows, (row) => row.table)) {
      const partition = this.#partitions.get(partitionKey(table, scopeKey));
      if (!partition) continue;
      if (partition.estimate !== undefined) partition.estimate += tableRows.length;
      if (partition.building) {
        for (const row of tableRows) partition.pending.push({ kind: "upsert", row });
      } else if (partition.index) {
        updateOrDrop(partition, (index) => upsertRows(index, tableRows));
        partition.dirty = true;
      }
    }
  }

  /**
   * Called inside a forget's (immediate) transaction, before any row goes: deletes the scope's
   * persisted indexes, so even a crash right after the commit leaves none that holds a forgotten row.
   */
  beforeForget(scopeKey: string, tables: readonly VectorTable[]): void {
    for (const table of tables) {
      this.#disk.remove(table.table, scopeKey);
      const partition = this.#partitions.get(partitionKey(table.table, scopeKey));
      // If the forget rolls back, the loaded index is still right and must be written again at close.
      if (partition?.index) partition.dirty = true;
    }
  }

  /** Called after a forget's transaction commits: loaded indexes drop the rows too. */
  afterForget(scopeKey: string, removed: readonly { table: string; rowids: readonly number[] }[]): void {
    this.#listener?.({ kind: "forget", scopeKey, removed });
    for (const { table, rowids } of removed) {
      const partition = this.#partitions.get(partitionKey(table, scopeKey));
      if (!partition || rowids.length === 0) continue;
      partition.estimate = undefined;
      if (partition.building) partition.pending.push({ kind: "remove", rowids });
      if (partition.index) {
        updateOrDrop(partition, (index) => index.remove(rowids));
        partition.tainted = true;
      }
    }
  }

  /**
   * Hands every later commit's and forget's vector changes to `listener` as well (the read pool
   * forwards them to its workers' registries). One listener; a second replaces the first.
   */
  follow(listener: (change: IndexChange) => void): void {
    this.#listener = listener;
  }

  /**
   * How many times another connection's commit has been noticed so far, looking now: a read worker
   * whose registry was loaded at another count drops it (`resetAll`) before it searches.
   */
  externalWrites(): number {
    this.#noticeExternalWrites();
    return this.#externalWrites;
  }

  /** Forgets every loaded index and count (another process wrote): reloaded and caught up when next searched. */
  resetAll(): void {
    for (const partition of this.#partitions.values()) resetPartition(partition);
  }

  /** Waits for running builds, then persists every loaded index that changed and may be written. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#partitions.values()].map((partition) => partition.building));
    this.#noticeExternalWrites();
    if (this.#follower) {
      this.#partitions.clear();
      return;
    }
    for (const partition of this.#partitions.values()) {
      if (partition.index && partition.dirty && !partition.tainted) this.#disk.save(partition, partition.index);
    }
    this.#partitions.clear();
  }

  #partitionOf(space: string, scope: Scope): VectorPartition {
    const table = this.#spaceTable(space);
    if (!table) throw new StoreError("vectorIndex", `no vector space named ${space}`);
    return this.#partition(table, keyOfScope(validateScope(scope)));
  }

  #partition(table: VectorTable, scopeKey: string): VectorPartition {
    const key = partitionKey(table.table, scopeKey);
    let partition = this.#partitions.get(key);
    if (!partition) {
      partition = newVectorPartition(this.#folder, table, scopeKey);
      this.#partitions.set(key, partition);
    }
    return partition;
  }

  /** From disk if a valid manifest allows, else a background build (searches stay exact meanwhile). */
  #load(partition: VectorPartition): void {
    if (partition.building || partition.error) return;
    if (!this.#disk.load(partition)) this.#build(partition);
  }

  #build(partition: VectorPartition): void {
    const { epoch } = partition;
    const outputPath = this.#disk.buildPath(partition);
    partition.pending = [];
    partition.building = buildInWorker({
      databasePath: this.#databasePath,
      table: partition.table.table,
      scopeKey: partition.scopeKey,
      dimensions: partition.table.dimensions,
      hnsw: this.options.hnsw,
      outputPath,
    })
      .then((built) => {
        this.#noticeExternalWrites();
        // Reset meanwhile (another connection wrote, perhaps a forget): the snapshot cannot be trusted.
        if (partition.epoch !== epoch) return;
        this.#adopt(partition, outputPath, built);
      })
      .catch((error: unknown) => {
        partition.error = `vector index build failed: ${messageOf(error)}`;
      })
      .finally(() => {
        this.#disk.discardBuild(outputPath);
        partition.building = undefined;
        partition.pending = [];
      });
  }

  /** Takes a finished build: replays what was committed meanwhile, then persists it if it is clean. */
  #adopt(partition: VectorPartition, outputPath: string, built: BuiltIndex): void {
    const index = VectorIndex.load(outputPath, {
      dimensions: partition.table.dimensions,
      hnsw: this.options.hnsw,
      maxRowid: built.maxRowid,
    });
    const { removed } = replayPending(index, partition.pending);
    partition.index = index;
    partition.tainted = removed;
    partition.dirty = partition.pending.length > 0;
    if (!removed && !this.#follower) this.#disk.install(partition, outputPath, built);
  }

  /** Another connection committed: every loaded index may miss its rows (or hold ones it forgot). */
  #noticeExternalWrites(): void {
    if (this.#follower || !this.#watch.changedElsewhere()) return;
    this.#externalWrites++;
    this.resetAll();
  }

  /** Vectors in the partition, counted once and then kept up to date by the commit and forget hooks. */
  #estimate(partition: VectorPartition): number {
    partition.estimate ??= this.#rows.count(partition);
    return partition.estimate;
  }
}

/** A commit's or forget's vector changes, as `afterCommit` and `afterForget` received them. */
export type IndexChange =
  | { readonly kind: "commit"; readonly scopeKey: string; readonly rows: readonly VectorRow[] }
  | {
      readonly kind: "forget";
      readonly scopeKey: string;
      readonly removed: readonly { readonly table: string; readonly rowids: readonly number[] }[];
    };

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group) group.push(item);
    else groups.set(key(item), [item]);
  }
  return groups;
}
