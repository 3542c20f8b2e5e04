import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { itemAt } from "../../core/narrow.ts";
import { type HnswOptions, VectorIndex } from "../vector-index.ts";
import type { DataVersionWatch } from "./data-version-watch.ts";
import type { PartitionRows } from "./partition-rows.ts";
import { VectorIndexFiles } from "./vector-index-manifest.ts";
import { upsertRows, type VectorPartition } from "./vector-partition.ts";

/** Build outputs and temporary files younger than this may belong to a build another process runs now. */
const leftoverAgeMs = 86_400_000;

/** What a worker build reports about the index it wrote. */
export interface BuiltIndex {
  readonly count: number;
  readonly maxRowid: number;
}

/**
 * The ANN indexes on disk under `<store>/ann/`: loading one (caught up with rows committed since it was
 * written), saving one, installing a worker's build, and deleting a scope's before a forget. Every write
 * happens under SQLite's write lock and only while no other connection has committed unseen.
 */
export class PersistedIndexes {
  readonly #folder: string;
  readonly #hnsw: HnswOptions;
  readonly #maxCatchUp: number;
  readonly #rows: PartitionRows;
  readonly #watch: DataVersionWatch;
  #buildCount = 0;
  #swept = false;

  constructor(options: {
    folder: string;
    hnsw: HnswOptions;
    maxCatchUp: number;
    rows: PartitionRows;
    watch: DataVersionWatch;
  }) {
    this.#folder = options.folder;
    this.#hnsw = options.hnsw;
    this.#maxCatchUp = options.maxCatchUp;
    this.#rows = options.rows;
    this.#watch = options.watch;
  }

  /**
   * Loads the partition's index from disk if its manifest is valid and it lags by at most `maxCatchUp`
   * rows, catching it up; says whether it did. A truncated or foreign file is deleted: derived data,
   * so the caller rebuilds rather than fail the search.
   */
  load(partition: VectorPartition): boolean {
    const { dimensions } = partition.table;
    const manifest = partition.files.read({ dimensions, hnsw: this.#hnsw });
    if (!manifest) return false;
    const newer = this.#rows.newerRowids(partition, manifest.maxRowid);
    if (newer.length > this.#maxCatchUp) return false;
    try {
      const index = VectorIndex.load(partition.files.indexPath, {
        dimensions,
        hnsw: this.#hnsw,
        maxRowid: manifest.maxRowid,
      });
      upsertRows(index, this.#rows.vectors(partition.table, newer));
      partition.index = index;
      partition.dirty = newer.length > 0;
      return true;
    } catch {
      partition.files.remove();
      return false;
    }
  }

  /** Writes a loaded index and its manifest, then marks the partition clean. */
  save(partition: VectorPartition, index: VectorIndex): void {
    mkdirSync(this.#folder, { recursive: true });
    this.#watch.underWriteLock(() => {
      index.save(partition.files.indexPath);
      partition.files.write({
        dimensions: partition.table.dimensions,
        hnsw: this.#hnsw,
        count: index.size,
        maxRowid: index.maxRowid,
      });
    });
    partition.dirty = false;
  }

  /** A fresh path for a worker to build the partition's index at, beside where it will be installed. */
  buildPath(partition: VectorPartition): string {
    mkdirSync(this.#folder, { recursive: true });
    this.#sweepLeftovers();
    return `${partition.files.indexPath}.build-${process.pid}-${++this.#buildCount}`;
  }

  /** Moves a finished build's files into place and writes their manifest. */
  install(partition: VectorPartition, outputPath: string, built: BuiltIndex): void {
    this.#watch.underWriteLock(() => {
      const targets = VectorIndex.paths(partition.files.indexPath);
      VectorIndex.paths(outputPath).forEach((path, position) => {
        renameSync(path, itemAt(targets, position, "vector-index-paths"));
      });
      partition.files.write({ dimensions: partition.table.dimensions, hnsw: this.#hnsw, ...built });
    });
  }

  /** Deletes whatever a build left at `outputPath` (nothing, once `install` has moved it). */
  discardBuild(outputPath: string): void {
    for (const path of VectorIndex.paths(outputPath)) rmSync(path, { force: true });
  }

  /** Deletes a scope's persisted index of one vec0 table, so no process can load it again. */
  remove(table: string, scopeKey: string): void {
    new VectorIndexFiles(this.#folder, table, scopeKey).remove();
  }

  /**
   * Deletes build outputs and temporary files a crashed process left behind, once per process. Only
   * day-old ones: a younger one may belong to a build another process is running right now.
   */
  #sweepLeftovers(): void {
    if (this.#swept) return;
    this.#swept = true;
    const cutoff = Date.now() - leftoverAgeMs;
    for (const name of readdirSync(this.#folder)) {
      if (!/\.(build-\d+-\d+|\d+\.tmp)/.test(name)) continue;
      const path = join(this.#folder, name);
      const modified = statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Number.POSITIVE_INFINITY;
      if (modified < cutoff) {
        rmSync(path, { force: true });
      }
    }
  }
}
