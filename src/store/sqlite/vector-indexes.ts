import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Database } from "better-sqlite3";
import { StoreError } from "../../core/errors.ts";
import { scopeKey as keyOfScope, type Scope, validateScope } from "../../core/scope.ts";
import { type HnswOptions, type Neighbour, VectorIndex, vectorFromBlob } from "./vector-index.ts";
import { buildInWorker } from "./vector-index-build.ts";
import { VectorIndexFiles } from "./vector-index-manifest.ts";
import { imageSlots, type VectorRow, type VectorTable } from "./vector-rows.ts";

export interface VectorIndexOptions {
  /**
   * Vectors a (scope, space) partition must hold before its searches use the ANN index. Below it an
   * exact vec0 scan of the partition takes a few milliseconds and is always exact.
   */
  readonly minVectors: number;
  readonly hnsw: HnswOptions;
  /** With filters, ANN candidates fetched per wanted result; too few survivors fall back to exact vec0. */
  readonly filterOverFetch: number;
  /** Most rows a persisted index may lag behind its partition before it is rebuilt rather than caught up. */
  readonly maxCatchUp: number;
}

export const defaultVectorIndexOptions: VectorIndexOptions = Object.freeze({
  // Where vec0's exact scan (~0.55 µs a vector here) starts to cost more than an HNSW search (~1 ms).
  minVectors: 2_000,
  // Chosen on the benchmark corpus at 100k (bench/results/perf.md): f32, because bf16 and f16 scores
  // cap recall@10 near 0.94; M=32 and ef_search=512 give ≥ 0.98 for hashed n-gram vectors (the hard
  // case: short queries far from every document) and ≥ 0.99 for USE-lite, at ~2 ms a search.
  hnsw: Object.freeze({ connectivity: 32, expansionAdd: 128, expansionSearch: 512, quantization: "f32" as const }),
  filterOverFetch: 10,
  maxCatchUp: 5_000,
});

export type VectorIndexState = "exact" | "building" | "ready" | "failed";

export interface VectorIndexStatus {
  readonly state: VectorIndexState;
  /** Vectors the partition holds (what `minVectors` is checked against). */
  readonly vectors: number;
  /** Vectors in the loaded index, if one is loaded. */
  readonly indexed: number | null;
  readonly error: string | null;
}

type PendingChange =
  | { readonly kind: "upsert"; readonly row: VectorRow }
  | { readonly kind: "remove"; readonly rowids: readonly number[] };

interface Partition {
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
  readonly #db: Database;
  readonly #databasePath: string;
  readonly #folder: string;
  readonly #spaceTable: (space: string) => VectorTable | undefined;
  readonly #partitions = new Map<string, Partition>();
  /** Set on first use: before it nothing is loaded that another connection's writes could make stale. */
  #dataVersion: number | undefined;
  #buildCount = 0;
  #swept = false;

  constructor(
    db: Database,
    options: {
      databasePath: string;
      folder: string;
      /** The vec0 table behind a vector space name, if the space exists. */
      spaceTable: (space: string) => VectorTable | undefined;
      options?: Partial<VectorIndexOptions>;
    },
  ) {
    this.#db = db;
    this.#databasePath = options.databasePath;
    this.#folder = options.folder;
    this.#spaceTable = options.spaceTable;
    this.options = Object.freeze({ ...defaultVectorIndexOptions, ...options.options });
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
    const vectors = this.#estimate(partition);
    const state: VectorIndexState = partition.index
      ? "ready"
      : partition.building
        ? "building"
        : partition.error
          ? "failed"
          : "exact";
    return { state, vectors, indexed: partition.index?.size ?? null, error: partition.error };
  }

  /**
   * Called after a commit's transaction: loaded indexes take the new vectors at once. Never throws:
   * the commit has happened, and an index that cannot follow is dropped (rebuilt when next needed).
   */
  afterCommit(scopeKey: string, rows: readonly VectorRow[]): void {
    for (const [table, tableRows] of groupBy(rows, (row) => row.table)) {
      const partition = this.#partitions.get(partitionKey(table, scopeKey));
      if (!partition) continue;
      if (partition.estimate !== undefined) partition.estimate += tableRows.length;
      if (partition.building) {
        for (const row of tableRows) partition.pending.push({ kind: "upsert", row });
      } else if (partition.index) {
        const index = partition.index;
        this.#orDrop(partition, () => upsertRows(index, tableRows));
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
      new VectorIndexFiles(this.#folder, table.table, scopeKey).remove();
      const partition = this.#partitions.get(partitionKey(table.table, scopeKey));
      // If the forget rolls back, the loaded index is still right and must be written again at close.
      if (partition?.index) partition.dirty = true;
    }
  }

  /** Called after a forget's transaction commits: loaded indexes drop the rows too. */
  afterForget(scopeKey: string, removed: readonly { table: string; rowids: readonly number[] }[]): void {
    for (const { table, rowids } of removed) {
      const partition = this.#partitions.get(partitionKey(table, scopeKey));
      if (!partition || rowids.length === 0) continue;
      partition.estimate = undefined;
      if (partition.building) partition.pending.push({ kind: "remove", rowids });
      if (partition.index) {
        const index = partition.index;
        this.#orDrop(partition, () => index.remove(rowids));
        partition.tainted = true;
      }
    }
  }

  /** Waits for running builds, then persists every loaded index that changed and may be written. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#partitions.values()].map((partition) => partition.building));
    this.#noticeExternalWrites();
    for (const partition of this.#partitions.values()) {
      if (partition.index && partition.dirty && !partition.tainted) this.#persist(partition, partition.index);
    }
    this.#partitions.clear();
  }

  /**
   * Runs an update of a loaded index. If it fails (out of memory, say), the index and its files go and
   * the partition is searched exactly; `status` reports why, and a new process builds afresh.
   */
  #orDrop(partition: Partition, update: () => void): void {
    try {
      update();
    } catch (error) {
      partition.index = undefined;
      partition.error = `vector index update failed: ${error instanceof Error ? error.message : String(error)}`;
      partition.files.remove();
    }
  }

  #partitionOf(space: string, scope: Scope): Partition {
    const table = this.#spaceTable(space);
    if (!table) throw new StoreError("vectorIndex", `no vector space named ${space}`);
    return this.#partition(table, keyOfScope(validateScope(scope)));
  }

  #partition(table: VectorTable, scopeKey: string): Partition {
    const key = partitionKey(table.table, scopeKey);
    let partition = this.#partitions.get(key);
    if (!partition) {
      partition = {
        table,
        scopeKey,
        files: new VectorIndexFiles(this.#folder, table.table, scopeKey),
        estimate: undefined,
        index: undefined,
        building: undefined,
        pending: [],
        dirty: false,
        tainted: false,
        epoch: 0,
        error: null,
      };
      this.#partitions.set(key, partition);
    }
    return partition;
  }

  /** From disk if a valid manifest allows, else a background build (searches stay exact meanwhile). */
  #load(partition: Partition): void {
    if (partition.building || partition.error) return;
    const { dimensions } = partition.table;
    const manifest = partition.files.read({ dimensions, hnsw: this.options.hnsw });
    if (manifest) {
      const newer = this.#newerRowids(partition, manifest.maxRowid);
      if (newer.length <= this.options.maxCatchUp) {
        try {
          const index = VectorIndex.load(partition.files.indexPath, {
            dimensions,
            hnsw: this.options.hnsw,
            maxRowid: manifest.maxRowid,
          });
          upsertRows(index, this.#vectorsOf(partition.table, newer));
          partition.index = index;
          partition.dirty = newer.length > 0;
          return;
        } catch {
          // A truncated or foreign file: derived data, so rebuild rather than fail the search.
          partition.files.remove();
        }
      }
    }
    this.#build(partition);
  }

  #build(partition: Partition): void {
    mkdirSync(this.#folder, { recursive: true });
    this.#sweepLeftovers();
    const { epoch } = partition;
    const outputPath = `${partition.files.indexPath}.build-${process.pid}-${++this.#buildCount}`;
    partition.pending = [];
    partition.building = buildInWorker({
      databasePath: this.#databasePath,
      table: partition.table.table,
      scopeKey: partition.scopeKey,
      dimensions: partition.table.dimensions,
      hnsw: this.options.hnsw,
      outputPath,
    })
      .then((result) => {
        this.#noticeExternalWrites();
        // Reset meanwhile (another connection wrote, perhaps a forget): the snapshot cannot be trusted.
        if (partition.epoch !== epoch) return;
        this.#adopt(partition, outputPath, result);
      })
      .catch((error: unknown) => {
        partition.error = `vector index build failed: ${error instanceof Error ? error.message : String(error)}`;
      })
      .finally(() => {
        for (const path of VectorIndex.paths(outputPath)) rmSync(path, { force: true });
        partition.building = undefined;
        partition.pending = [];
      });
  }

  /** Takes a finished build: replays what was committed meanwhile, then persists it if it is clean. */
  #adopt(partition: Partition, outputPath: string, result: { count: number; maxRowid: number }): void {
    const index = VectorIndex.load(outputPath, {
      dimensions: partition.table.dimensions,
      hnsw: this.options.hnsw,
      maxRowid: result.maxRowid,
    });
    let removed = false;
    for (const change of partition.pending) {
      if (change.kind === "upsert") upsertRows(index, [change.row]);
      else {
        index.remove(change.rowids);
        removed = true;
      }
    }
    partition.index = index;
    partition.tainted = removed;
    partition.dirty = partition.pending.length > 0;
    if (!removed) {
      this.#underWriteLock(() => {
        const targets = VectorIndex.paths(partition.files.indexPath);
        VectorIndex.paths(outputPath).forEach((path, position) => {
          renameSync(path, targets[position] as string);
        });
        partition.files.write({ dimensions: partition.table.dimensions, hnsw: this.options.hnsw, ...result });
      });
    }
  }

  /**
   * Deletes build outputs and temporary files a crashed process left behind, once per process. Only
   * day-old ones: a younger one may belong to a build another process is running right now.
   */
  #sweepLeftovers(): void {
    if (this.#swept) return;
    this.#swept = true;
    const dayAgo = Date.now() - 86_400_000;
    for (const name of readdirSync(this.#folder)) {
      if (!/\.(build-\d+-\d+|\d+\.tmp)/.test(name)) continue;
      const path = join(this.#folder, name);
      const modified = statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Number.POSITIVE_INFINITY;
      if (modified < dayAgo) {
        rmSync(path, { force: true });
      }
    }
  }

  #persist(partition: Partition, index: VectorIndex): void {
    mkdirSync(this.#folder, { recursive: true });
    this.#underWriteLock(() => {
      index.save(partition.files.indexPath);
      partition.files.write({
        dimensions: partition.table.dimensions,
        hnsw: this.options.hnsw,
        count: index.size,
        maxRowid: index.maxRowid,
      });
    });
    partition.dirty = false;
  }

  /**
   * Writes index files holding SQLite's write lock, after checking no other connection committed since
   * this one last looked: a concurrent forget (which deletes the files under the same lock) can then
   * never be overtaken by a manifest describing the rows it removed.
   */
  #underWriteLock(write: () => void): void {
    this.#db
      .transaction(() => {
        if (this.#readDataVersion() !== this.#dataVersion) return;
        write();
      })
      .immediate();
  }

  /** Another connection committed: every loaded index may miss its rows (or hold ones it forgot). */
  #noticeExternalWrites(): void {
    const version = this.#readDataVersion();
    if (version === this.#dataVersion) return;
    const first = this.#dataVersion === undefined;
    this.#dataVersion = version;
    if (first) return;
    for (const partition of this.#partitions.values()) {
      partition.epoch++;
      partition.index = undefined;
      partition.estimate = undefined;
      partition.dirty = false;
      partition.tainted = false;
      partition.error = null;
    }
  }

  #readDataVersion(): number {
    return this.#db.pragma("data_version", { simple: true }) as number;
  }

  /** Vectors in the partition, counted once and then kept up to date by the commit and forget hooks. */
  #estimate(partition: Partition): number {
    partition.estimate ??= this.#countVectors(partition);
    return partition.estimate;
  }

  /**
   * vec0 keeps a validity bitmap per chunk of 1,024 vectors, tagged with the partition key: its set bits
   * are the exact count, read in milliseconds, where `count(*)` on vec0 reads every vector of every
   * partition (~0.5 s at 100k). That layout is sqlite-vec 0.1.9's (pinned); should it change, counting
   * the scope's raw nodes (or images) still gives an upper bound.
   */
  #countVectors(partition: Partition): number {
    const { table, kind } = partition.table;
    try {
      const bitmaps = this.#db
        .prepare(`SELECT validity FROM ${table}_chunks WHERE partition00 = ?`)
        .pluck()
        .all(partition.scopeKey) as Buffer[];
      return bitmaps.reduce((sum, bitmap) => sum + countBits(bitmap), 0);
    } catch {
      const sql =
        kind === "text"
          ? "SELECT count(*) FROM raw_nodes WHERE scope_key = ?"
          : "SELECT count(*) FROM raw_node_images i JOIN raw_nodes r ON r.rowid = i.raw_node_rowid WHERE r.scope_key = ?";
      return this.#db.prepare(sql).pluck().get(partition.scopeKey) as number;
    }
  }

  /** Vector rowids of the partition above `maxRowid`: what a persisted index has not seen yet. */
  #newerRowids(partition: Partition, maxRowid: number): number[] {
    if (partition.table.kind === "text") {
      // `+scope_key` keeps SQLite on the rowid range instead of scanning the whole scope's index.
      return (
        this.#db
          .prepare("SELECT rowid FROM raw_nodes WHERE rowid > ? AND +scope_key = ? ORDER BY rowid")
          .all(maxRowid, partition.scopeKey) as { rowid: number }[]
      ).map((row) => row.rowid);
    }
    const rows = this.#db
      .prepare(
        `SELECT i.raw_node_rowid * ${imageSlots} + i.ordinal AS rowid FROM raw_nodes r
         JOIN raw_node_images i ON i.raw_node_rowid = r.rowid WHERE r.rowid >= ? AND +r.scope_key = ? ORDER BY 1`,
      )
      .all(Math.floor(maxRowid / imageSlots), partition.scopeKey) as { rowid: number }[];
    return rows.map((row) => row.rowid).filter((rowid) => rowid > maxRowid);
  }

  /** vec0 point lookups (well under a millisecond each); rows without a vector in this space are skipped. */
  #vectorsOf(table: VectorTable, rowids: readonly number[]): VectorRow[] {
    const lookup = this.#db.prepare(`SELECT embedding FROM ${table.table} WHERE rowid = ?`).pluck();
    const rows: VectorRow[] = [];
    for (const rowid of rowids) {
      const blob = lookup.get(BigInt(rowid)) as Buffer | undefined;
      // Copied: the index keeps no reference, but pending changes may outlive the statement's buffer.
      if (blob) rows.push({ table: table.table, rowid, vector: vectorFromBlob(blob, table.dimensions).slice() });
    }
    return rows;
  }
}

function upsertRows(index: VectorIndex, rows: readonly VectorRow[]): void {
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

const bitsInByte = Uint8Array.from({ length: 256 }, (_, byte) => {
  let bits = 0;
  for (let value = byte; value > 0; value >>= 1) bits += value & 1;
  return bits;
});

function countBits(bitmap: Uint8Array): number {
  let bits = 0;
  for (const byte of bitmap) bits += bitsInByte[byte] as number;
  return bits;
}

function partitionKey(table: string, scopeKey: string): string {
  return `${table}\u0000${scopeKey}`;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group) group.push(item);
    else groups.set(key(item), [item]);
  }
  return groups;
}
