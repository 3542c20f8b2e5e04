import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { type HnswOptions, VectorIndex } from "../vector-index.ts";

/**
 * The small JSON file beside a persisted index that says what the index covers. Its presence is
 * the promise "the index holds exactly the partition's vec0 rows with rowid ≤ maxRowid"; anything
 * that could break that promise (a forget) deletes the manifest first, so a missing, unreadable or
 * mismatched manifest only ever means "rebuild".
 */
export interface VectorIndexManifest {
  readonly format: 1;
  readonly table: string;
  /** Hash of the scope key: file names and manifests never spell out tenant or user ids. */
  readonly scope: string;
  readonly dimensions: number;
  /** The settings that shape the graph; `expansionSearch` is not one, so it can change freely. */
  readonly graph: GraphSettings;
  readonly count: number;
  readonly maxRowid: number;
}

const manifestSchema = z.object({
  format: z.literal(1),
  table: z.string(),
  scope: z.string(),
  dimensions: z.number().int().positive(),
  graph: z.object({
    connectivity: z.number().int(),
    expansionAdd: z.number().int(),
    quantization: z.enum(["f32", "f16", "bf16", "i8"]),
  }),
  count: z.number().int().nonnegative(),
  maxRowid: z.number().int().nonnegative(),
});

/** Where one partition's index and manifest live: `<folder>/<table>-<scope hash>.usearch|.json`. */
export class VectorIndexFiles {
  readonly table: string;
  readonly scope: string;
  /** Where `VectorIndex.save` writes (it adds a `.keys` file beside it). */
  readonly indexPath: string;
  readonly manifestPath: string;

  constructor(folder: string, table: string, scopeKey: string) {
    this.table = table;
    this.scope = createHash("sha256").update(scopeKey).digest("hex").slice(0, 24);
    const base = join(folder, `${table}-${this.scope}`);
    this.indexPath = `${base}.usearch`;
    this.manifestPath = `${base}.json`;
  }

  /** The manifest if it describes an index file that exists and was built with these very settings. */
  read(expected: { dimensions: number; hnsw: HnswOptions }): VectorIndexManifest | null {
    if (!existsSync(this.manifestPath) || !VectorIndex.paths(this.indexPath).every((path) => existsSync(path))) {
      return null;
    }
    let manifest: VectorIndexManifest;
    try {
      manifest = manifestSchema.parse(JSON.parse(readFileSync(this.manifestPath, "utf8"))) as VectorIndexManifest;
    } catch {
      // A torn or foreign manifest is just a stale one: the index is derived and gets rebuilt.
      return null;
    }
    const matches =
      manifest.table === this.table &&
      manifest.scope === this.scope &&
      manifest.dimensions === expected.dimensions &&
      JSON.stringify(manifest.graph) === JSON.stringify(graphSettings(expected.hnsw));
    return matches ? manifest : null;
  }

  write(content: { dimensions: number; hnsw: HnswOptions; count: number; maxRowid: number }): void {
    const manifest: VectorIndexManifest = {
      format: 1,
      table: this.table,
      scope: this.scope,
      dimensions: content.dimensions,
      graph: graphSettings(content.hnsw),
      count: content.count,
      maxRowid: content.maxRowid,
    };
    const temporary = `${this.manifestPath}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(manifest, null, 2)}\n`);
    renameSync(temporary, this.manifestPath);
  }

  /**
   * Drops the persisted index: the manifest first (so a crash in between leaves a stale index, never a
   * trusted one), then the file, which may hold the vectors of rows about to be forgotten.
   */
  remove(): void {
    rmSync(this.manifestPath, { force: true });
    for (const path of VectorIndex.paths(this.indexPath)) rmSync(path, { force: true });
  }
}

type GraphSettings = Pick<HnswOptions, "connectivity" | "expansionAdd" | "quantization">;

/** In a fixed key order, so comparing two of them as JSON is meaningful. */
function graphSettings(hnsw: HnswOptions): GraphSettings {
  return { connectivity: hnsw.connectivity, expansionAdd: hnsw.expansionAdd, quantization: hnsw.quantization };
}
