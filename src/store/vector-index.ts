import { createHash } from "node:crypto";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { ScalarKind, Index as UsearchIndex } from "usearch";

/**
 * usearch's CommonJS build, on purpose: its ES module finds its native binary by parsing a stack
 * trace (`bindings.getFileName`), which loops forever inside a worker whose modules tsx loads.
 */
const usearch = createRequire(import.meta.url)("usearch") as typeof import("usearch");

export type Quantization = "f32" | "f16" | "bf16" | "i8";

/**
 * Shape of the HNSW graph (usearch). A persisted index built with another connectivity,
 * expansionAdd or quantization is rebuilt, so these can change between releases freely.
 */
export interface HnswOptions {
  /** Edges per node (HNSW's M). */
  readonly connectivity: number;
  /** Candidate list while inserting (efConstruction): higher builds slower, finds better edges. */
  readonly expansionAdd: number;
  /** Candidate list while searching (ef): the recall/latency knob; needs no rebuild. */
  readonly expansionSearch: number;
  /**
   * A larger ef_search for a larger graph: `[fromVectors, expansionSearch]` pairs, each applying once the
   * index holds at least `fromVectors` distinct vectors (the largest step reached wins; never below
   * `expansionSearch`). HNSW's recall at a fixed ef_search falls as the graph grows (decision 041).
   */
  readonly expansionSearchSteps?: readonly (readonly [fromVectors: number, expansionSearch: number])[];
  /** How vectors are stored inside the graph; anything but f32 caps recall (scores lose digits). */
  readonly quantization: Quantization;
}

export interface Neighbour {
  /** The vec0 rowid the vector was stored under. */
  readonly rowid: number;
  /** Cosine similarity (1 − usearch's cosine distance); approximate when quantized. */
  readonly similarity: number;
}

/** Above this many new vectors in one call, usearch may use every core (it spawns threads per call). */
const parallelAddThreshold = 1_024;

/**
 * One HNSW graph over the vectors of one (vector space, scope) partition; results are vec0 rowids.
 * A derived copy: vec0 stays the source of truth and this can always be rebuilt from it.
 *
 * Identical vectors share one graph node. People repeat themselves ("ok, thanks!"), and a cluster
 * of more identical vectors than HNSW has edges per node links mostly to itself: measured on the
 * benchmark corpus, recall@10 fell from 0.99 to 0.94 with duplicates left in. So a node's usearch
 * key is a 64-bit hash of its vector's bytes, and this class maps each key to its rowids.
 */
export class VectorIndex {
  readonly dimensions: number;
  readonly #index: UsearchIndex;
  readonly #steps: readonly (readonly [number, number])[];
  readonly #rowidsOf = new Map<bigint, number[]>();
  readonly #keyOf = new Map<number, bigint>();
  #maxRowid: number;

  private constructor(index: UsearchIndex, dimensions: number, maxRowid: number, hnsw: HnswOptions) {
    this.#index = index;
    this.#steps = hnsw.expansionSearchSteps ?? [];
    this.dimensions = dimensions;
    this.#maxRowid = maxRowid;
  }

  static create(dimensions: number, hnsw: HnswOptions): VectorIndex {
    return new VectorIndex(newUsearchIndex(dimensions, hnsw), dimensions, 0, hnsw);
  }

  /** Reads the files `save` wrote. `maxRowid` comes from the manifest. */
  static load(path: string, options: { dimensions: number; hnsw: HnswOptions; maxRowid: number }): VectorIndex {
    const native = newUsearchIndex(options.dimensions, options.hnsw);
    native.load(path);
    const index = new VectorIndex(native, options.dimensions, options.maxRowid, options.hnsw);
    const { rowids, keys } = readKeyFile(keyFilePath(path));
    rowids.forEach((rowid, position) => {
      index.#attach(rowid, keys[position] as bigint);
    });
    if (index.#rowidsOf.size !== native.size()) {
      throw new Error(`index ${path} holds ${native.size()} vectors but its key file names ${index.#rowidsOf.size}`);
    }
    return index;
  }

  /** Both files an index is saved to, for renaming or deleting them together. */
  static paths(path: string): [index: string, keys: string] {
    return [path, keyFilePath(path)];
  }

  /** Rowids indexed (identical vectors count once per rowid). */
  get size(): number {
    return this.#keyOf.size;
  }

  /** Highest rowid ever added: rows above it were committed after this index last caught up. */
  get maxRowid(): number {
    return this.#maxRowid;
  }

  /** Adds vectors (`rowids.length × dimensions`, row-major), replacing any already under those rowids. */
  upsert(rowids: readonly number[], vectors: Float32Array): void {
    if (vectors.length !== rowids.length * this.dimensions) {
      throw new RangeError(`expected ${rowids.length} × ${this.dimensions} values, got ${vectors.length}`);
    }
    // A rowid can come back after a forget (SQLite reuses the largest rowid): drop what it held.
    this.remove(rowids.filter((rowid) => this.#keyOf.has(rowid)));
    const newKeys: bigint[] = [];
    const newVectors: Float32Array[] = [];
    rowids.forEach((rowid, position) => {
      const vector = vectors.subarray(position * this.dimensions, (position + 1) * this.dimensions);
      const key = vectorKey(vector);
      if (!this.#rowidsOf.has(key)) {
        newKeys.push(key);
        newVectors.push(vector);
      }
      this.#attach(rowid, key);
      if (rowid > this.#maxRowid) this.#maxRowid = rowid;
    });
    if (newKeys.length === 0) return;
    const flat = new Float32Array(newKeys.length * this.dimensions);
    newVectors.forEach((vector, position) => {
      flat.set(vector, position * this.dimensions);
    });
    this.#index.add(BigUint64Array.from(newKeys), flat, newKeys.length >= parallelAddThreshold ? 0 : 1);
  }

  remove(rowids: readonly number[]): void {
    const emptied: bigint[] = [];
    for (const rowid of rowids) {
      const key = this.#keyOf.get(rowid);
      if (key === undefined) continue;
      this.#keyOf.delete(rowid);
      const siblings = (this.#rowidsOf.get(key) ?? []).filter((other) => other !== rowid);
      if (siblings.length > 0) this.#rowidsOf.set(key, siblings);
      else {
        this.#rowidsOf.delete(key);
        emptied.push(key);
      }
    }
    if (emptied.length > 0) this.#index.remove(BigUint64Array.from(emptied));
  }

  /** The ef_search a step sets for a graph of this size, or 0 below every step (the index's own applies). */
  get steppedExpansion(): number {
    let expansion = 0;
    for (const [fromVectors, ef] of this.#steps)
      if (this.#rowidsOf.size >= fromVectors) expansion = Math.max(expansion, ef);
    return expansion;
  }

  /** At least `k` nearest rowids when the index holds that many, most similar first. */
  search(vector: Float32Array, k: number): Neighbour[] {
    if (this.#rowidsOf.size === 0 || k <= 0) return [];
    // usearch searches with a candidate list of max(its ef_search, wanted): asking for more than `k`
    // raises ef_search for this call, so a step applies as the graph grows, with no rebuild or reload.
    const wanted = Math.max(k, this.steppedExpansion);
    // A copy: the native side reads from the start of the buffer, ignoring a view's offset (DESIGN §6).
    const matches = this.#index.search(vector.slice(), wanted, 1);
    const neighbours: Neighbour[] = [];
    for (let position = 0; position < matches.keys.length && neighbours.length < k; position++) {
      const similarity = 1 - (matches.distances[position] as number);
      for (const rowid of this.#rowidsOf.get(matches.keys[position] as bigint) ?? []) {
        neighbours.push({ rowid, similarity });
      }
    }
    return neighbours;
  }

  /** Writes the graph and its key file, each atomically (temporary file, then rename). */
  save(path: string): void {
    const [indexPath, keysPath] = VectorIndex.paths(path);
    this.#index.save(`${indexPath}.${process.pid}.tmp`);
    writeKeyFile(`${keysPath}.${process.pid}.tmp`, this.#keyOf);
    renameSync(`${indexPath}.${process.pid}.tmp`, indexPath);
    renameSync(`${keysPath}.${process.pid}.tmp`, keysPath);
  }

  #attach(rowid: number, key: bigint): void {
    this.#keyOf.set(rowid, key);
    const rowids = this.#rowidsOf.get(key);
    if (rowids) rowids.push(rowid);
    else this.#rowidsOf.set(key, [rowid]);
  }
}

/** A vec0 BLOB as a Float32Array: a view when aligned, else a copy (typed arrays need 4-byte alignment). */
export function vectorFromBlob(blob: Uint8Array, dimensions: number): Float32Array {
  if (blob.byteOffset % Float32Array.BYTES_PER_ELEMENT === 0) {
    return new Float32Array(blob.buffer, blob.byteOffset, dimensions);
  }
  return new Float32Array(new Uint8Array(blob).buffer, 0, dimensions);
}

/**
 * 64 bits of SHA-256 of the vector's bytes. Two different vectors colliding (odds ~n²/2⁶⁵, 3·10⁻⁸ at
 * a million) would share a node and one would be found under the other's score. The top value is
 * usearch's "no key" marker, so it is never used.
 */
function vectorKey(vector: Float32Array): bigint {
  const digest = createHash("sha256").update(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength));
  return digest.digest().readBigUInt64LE(0) & 0x7fff_ffff_ffff_ffffn;
}

function keyFilePath(path: string): string {
  return `${path}.keys`;
}

/** Little-endian: count (f64), then the rowids (f64 each), then their keys (u64 each). */
function writeKeyFile(path: string, keyOf: ReadonlyMap<number, bigint>): void {
  const count = keyOf.size;
  const rowids = new Float64Array(count + 1);
  const keys = new BigUint64Array(count);
  rowids[0] = count;
  let position = 0;
  for (const [rowid, key] of keyOf) {
    rowids[position + 1] = rowid;
    keys[position++] = key;
  }
  writeFileSync(path, Buffer.concat([new Uint8Array(rowids.buffer), new Uint8Array(keys.buffer)]));
}

function readKeyFile(path: string): { rowids: Float64Array; keys: BigUint64Array } {
  const bytes = readFileSync(path);
  const aligned = new Uint8Array(bytes).buffer;
  const count = bytes.length >= 8 ? new Float64Array(aligned, 0, 1)[0] : -1;
  if (count === undefined || !Number.isInteger(count) || count < 0 || bytes.length !== 8 + count * 16) {
    throw new Error(`key file ${path} is truncated or not a key file`);
  }
  return { rowids: new Float64Array(aligned, 8, count), keys: new BigUint64Array(aligned, 8 + count * 8, count) };
}

function newUsearchIndex(dimensions: number, hnsw: HnswOptions): UsearchIndex {
  return new usearch.Index({
    dimensions,
    metric: usearch.MetricKind.Cos,
    // The enum's values are these very strings.
    quantization: hnsw.quantization as ScalarKind,
    connectivity: hnsw.connectivity,
    expansion_add: hnsw.expansionAdd,
    expansion_search: hnsw.expansionSearch,
    multi: false,
  });
}
