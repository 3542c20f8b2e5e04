import type pg from "pg";
import { StoreError } from "../../core/errors.ts";
import { type HnswOptions, type Neighbour, VectorIndex } from "../vector-index.ts";
import { defaultVectorIndexOptions } from "../vector-index-options.ts";
import { inTenant, prepared, readInOneTrip, type Sql } from "./tenant-transaction.ts";
import { type SpaceRow, vectorFromSend } from "./vector-spaces.ts";

/**
 * The Postgres store's approximate vector search (decision 025): an in-memory usearch HNSW graph
 * per (vector space, scope) in each Cairn process, the SQLite store's `VectorIndex`, over the
 * vectors Postgres holds in plain tables. Derived and private to the process: Postgres stays the
 * only truth, shared by every instance, and no write waits for a graph.
 *
 * - *Caught up before every search.* Each vector row carries `seq`, drawn under its scope's write
 *   lock, so within a scope seq order is commit order: an index that holds every row up to `seq`
 *   W misses exactly the rows with seq > W, and the search's first statement reads those (in its
 *   snapshot, so every write acknowledged before the search began) and adds them.
 * - *Dropped when a vector goes.* Forget and vector replacement renew the scope's
 *   `vector_generation` (`index_state`); the same statement reads it, and an index of an older
 *   generation is thrown away (with the forgotten vectors it held) and built again in the
 *   background. Candidates are scored exactly from the rows the search's snapshot sees, so a row
 *   deleted meanwhile never surfaces either.
 * - *Built off the search path.* A scope without a usable index is searched exactly (as the SQLite
 *   store does while it builds) while one transaction reads the scope's vectors and the graph is
 *   built in chunks that yield to the event loop between them.
 */
export interface AnnOptions {
  readonly hnsw: HnswOptions;
  /** With filters, candidates fetched per wanted result; too few survivors fall back to the exact scan. */
  readonly filterOverFetch: number;
  /** Most new rows a search adds before it answers; a longer lag rebuilds in the background instead. */
  readonly maxCatchUp: number;
  /** Rows a build reads per statement. */
  readonly buildPage: number;
  /**
   * Most bytes (estimated, see `estimatedBytes`) this process's graphs may hold together. Past it,
   * the graphs of the scopes searched least recently are dropped (their scopes are scanned exactly
   * and the graph is built again at their next search), never the one just searched.
   */
  readonly maxBytes: number;
}

/** The SQLite store's graph settings (M 32, ef_construction 128, ef_search 512 growing to 1024 from 250,000 vectors, f32): the same recall on both. */
export const defaultAnnOptions: AnnOptions = Object.freeze({
  hnsw: defaultVectorIndexOptions.hnsw,
  filterOverFetch: defaultVectorIndexOptions.filterOverFetch,
  maxCatchUp: defaultVectorIndexOptions.maxCatchUp,
  buildPage: 8_192,
  // 1 GiB: about 650,000 256-dimension vectors (1.6 KiB each) across every scope this process searches.
  maxBytes: 1024 ** 3,
});

/** Bytes a scalar takes in the graph, per quantization. */
const scalarBytes = { f32: 4, f16: 2, bf16: 2, i8: 1 } as const;

/**
 * What a graph of `size` vectors of `dimensions` holds in memory, estimated: the vectors at the
 * graph's quantization, up to `2 × connectivity` level-0 links of 4 bytes each, ~96 bytes of key
 * maps and level bookkeeping per vector, and ~160 bytes for the row → raw node map (two map
 * entries and the raw node's id, decision 036). An estimate for the bound, not a measurement.
 */
export function estimatedBytes(size: number, dimensions: number, hnsw: HnswOptions): number {
  return size * (dimensions * scalarBytes[hnsw.quantization] + 2 * hnsw.connectivity * 4 + 96 + 160);
}

/** Vectors handed to usearch per step of a build: each step blocks the event loop for tens of milliseconds. */
const buildChunk = 1_024;

/**
 * What the graph's rows stand for: vector row seq → raw node rowid, raw node rowid → id, filled
 * from the same rows the graph is (built and caught up together, dropped together). Both
 * mappings never change: seqs and rowids are drawn from sequences and never reused.
 */
interface RowMap {
  readonly rawRowidOf: Map<number, number>;
  readonly idOf: Map<number, string>;
}

/** One raw node from the graph, at its nearest vector: cosine distance from the graph's f32 vectors. */
export interface GraphHit {
  readonly id: string;
  /** The raw node's rowid: equal distances rank in storage order, as the exact scan does. */
  readonly rowid: number;
  readonly distance: number;
}

interface Partition {
  readonly table: string;
  readonly scopeKey: string;
  readonly tenant: string;
  readonly dimensions: number;
  index?: VectorIndex;
  rows?: RowMap;
  /** Every row of the scope with seq ≤ this is in `index`. */
  seq: number;
  generation: number;
  /** Bumped whenever the index is dropped: a catch-up or build begun before it must not install. */
  epoch: number;
  building?: Promise<void>;
  error?: string;
}

interface CatchUpRow {
  readonly generation: number | null;
  readonly seq: number | null;
  readonly vector: Buffer | null;
  readonly raw_node_rowid: number | null;
  readonly id: string | null;
}

export class AnnIndexes {
  readonly options: AnnOptions;
  readonly #pool: pg.Pool;
  readonly #partitions = new Map<string, Partition>();
  #closed = false;
  #oneTrip = 0;

  constructor(pool: pg.Pool, options: Partial<AnnOptions> = {}) {
    this.#pool = pool;
    this.options = Object.freeze({ ...defaultAnnOptions, ...options });
  }

  /**
   * The `k` nearest vector rows (`rowid` = the row's seq) of the scope, from its caught-up index, or
   * null when it has none yet (one is then being built): the caller scans exactly.
   */
  async search(
    sql: Sql,
    space: SpaceRow,
    scope: { key: string; tenant: string },
    vector: Float32Array,
    k: number,
  ): Promise<Neighbour[] | null> {
    const built = this.#built(space, scope);
    if (!built) return null;
    const { partition, index, map, epoch } = built;
    const rows = await readRows(sql, partition, this.options.maxCatchUp + 1);
    if (!this.#caughtUp(partition, index, map, epoch, rows)) return null;
    return index.search(vector, k);
  }

  /**
   * The `k` nearest vector rows of the scope as raw nodes (each at its nearest vector, nearest
   * first, equal distances in rowid order), scored by the graph's own f32 vectors, in one round
   * trip: the transaction's opening, the catch-up statement (which also reads the largest seq its
   * snapshot sees) and the COMMIT go as one simple query. Null when the scope has no usable graph
   * (none yet, a forget the graph predates or postdates, too long a lag): the caller searches in a
   * transaction of its own, as before. Graph rows above the snapshot's largest seq (added by a
   * concurrent search with a newer snapshot) are left out, so the answer is the snapshot's; every
   * row at or below it is in the snapshot, since deletions renew the generation (decision 036).
   */
  async nearestNodes(
    space: SpaceRow,
    scope: { key: string; tenant: string },
    vector: Float32Array,
    k: number,
  ): Promise<GraphHit[] | null> {
    const built = this.#built(space, scope);
    if (!built) return null;
    const { partition, index, map, epoch } = built;
    const rows = await readInOneTrip<CatchUpRow & { visible: number | null }>(
      this.#pool,
      scope.tenant,
      "searchVectors",
      {
        text: prepared(rowsStatement(partition.table, this.options.maxCatchUp + 1, true)),
        values: [partition.scopeKey, partition.seq],
      },
    );
    if (!this.#caughtUp(partition, index, map, epoch, rows)) return null;
    // No vector row of the scope in the snapshot: nothing to find (a graph holding rows anyway
    // would hold only rows committed after it).
    const visible = rows[0]?.visible ?? 0;
    const best = new Map<number, number>();
    for (const { rowid: seq, similarity } of index.search(vector, k)) {
      if (seq > visible) continue;
      const rawRowid = map.rawRowidOf.get(seq);
      if (rawRowid === undefined) return null;
      const distance = 1 - similarity;
      if (distance < (best.get(rawRowid) ?? Number.POSITIVE_INFINITY)) best.set(rawRowid, distance);
    }
    const hits: GraphHit[] = [];
    for (const [rowid, distance] of best) {
      const id = map.idOf.get(rowid);
      if (id === undefined) return null;
      hits.push({ id, rowid, distance });
    }
    this.#oneTrip++;
    return hits.sort((left, right) => left.distance - right.distance || left.rowid - right.rowid);
  }

  /** Searches `nearestNodes` answered (in one round trip, from a graph): for tests and reports. */
  get oneTripAnswers(): number {
    return this.#oneTrip;
  }

  /**
   * Raw node rowid → id of the scope, as far as this process's graphs of the scope know them (a
   * graph knows every raw node with a vector in its space). A rowid → id pair never changes, so a
   * caller holding a rowid its snapshot sees may name it from here instead of reading it again.
   */
  knownIds(scopeKey: string): ReadonlyMap<number, string>[] {
    const known: ReadonlyMap<number, string>[] = [];
    for (const partition of this.#partitions.values()) {
      if (partition.scopeKey === scopeKey && partition.rows) known.push(partition.rows.idOf);
    }
    return known;
  }

  /**
   * Builds the scope's index of one space now if it has none, and resolves once searches use it.
   * Searches never wait for a build; benchmarks and warm-up code can.
   */
  async ready(space: SpaceRow, scope: { key: string; tenant: string }): Promise<void> {
    const partition = this.#partition(space, scope);
    if (partition.index) return this.#touch(partition);
    this.#build(partition);
    await partition.building;
    if (partition.error) throw new StoreError("vectorIndexReady", partition.error);
    if (!partition.index)
      throw new StoreError(
        "vectorIndexReady",
        "the vector index was dropped while building (a forget, or the store closed)",
      );
  }

  /** Estimated bytes of every graph this process holds (`estimatedBytes`): for tests and reports. */
  heldBytes(): number {
    let total = 0;
    for (const partition of this.#partitions.values()) total += this.#bytesOf(partition);
    return total;
  }

  /** Rows in the scope's index (0 when it has none): for tests and reports. */
  size(space: SpaceRow, scopeKey: string): number {
    return this.#partitions.get(`${space.table_name}\u0000${scopeKey}`)?.index?.size ?? 0;
  }

  /** Stops starting builds and waits for running ones (they stop at their next chunk), then frees every index. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#partitions.values()].map((partition) => partition.building));
    this.#partitions.clear();
  }

  /** The scope's graph and its row maps, marked used; null (and a build started) when it has none yet. */
  #built(space: SpaceRow, scope: { key: string; tenant: string }) {
    const partition = this.#partition(space, scope);
    const { index, rows: map, epoch } = partition;
    if (!index || !map) {
      this.#build(partition);
      return null;
    }
    this.#touch(partition);
    return { partition, index, map, epoch };
  }

  #partition(space: SpaceRow, scope: { key: string; tenant: string }): Partition {
    const key = `${space.table_name}\u0000${scope.key}`;
    let partition = this.#partitions.get(key);
    if (!partition) {
      partition = {
        table: space.table_name,
        scopeKey: scope.key,
        tenant: scope.tenant,
        dimensions: space.dimensions,
        seq: 0,
        generation: -1,
        epoch: 0,
      };
      this.#partitions.set(key, partition);
    }
    return partition;
  }

  /** Marks the partition searched just now: the last one `#bound` would drop. */
  #touch(partition: Partition): void {
    const key = `${partition.table}\u0000${partition.scopeKey}`;
    this.#partitions.delete(key);
    this.#partitions.set(key, partition);
  }

  #bytesOf(partition: Partition): number {
    return partition.index ? estimatedBytes(partition.index.size, partition.dimensions, this.options.hnsw) : 0;
  }

  /**
   * Drops the graphs of the scopes searched least recently until all of them together fit in
   * `maxBytes`, keeping `current` (the one just searched or built) whatever its size.
   */
  #bound(current: Partition): void {
    let total = this.heldBytes();
    for (const [key, partition] of this.#partitions) {
      if (total <= this.options.maxBytes) return;
      if (partition === current || !partition.index) continue;
      total -= this.#bytesOf(partition);
      this.#drop(partition);
      if (!partition.building) this.#partitions.delete(key);
    }
  }

  /**
   * Adds a catch-up read's rows (`readRows`' shape, read in the search's snapshot) to the graph.
   * False when the graph cannot answer for that snapshot: dropped meanwhile (another epoch); a
   * generation older than the graph's (the snapshot predates the forget the graph was rebuilt
   * after: rows it still sees are not in the graph); or a newer one, or too long a lag, after
   * which the graph is dropped and rebuilt. Generations come from a sequence.
   */
  #caughtUp(
    partition: Partition,
    index: VectorIndex,
    map: RowMap,
    epoch: number,
    rows: readonly CatchUpRow[],
  ): boolean {
    if (partition.epoch !== epoch) return false;
    const generation = generationOf(rows);
    if (generation < partition.generation) return false;
    if (generation > partition.generation || rows.length - 1 > this.options.maxCatchUp) {
      this.#drop(partition);
      this.#build(partition);
      return false;
    }
    const before = index.size;
    add(partition, index, map, rows.slice(1));
    if (index.size > before) this.#bound(partition);
    return true;
  }

  #drop(partition: Partition): void {
    partition.index = undefined;
    partition.rows = undefined;
    partition.seq = 0;
    partition.generation = -1;
    partition.epoch++;
  }

  /**
   * Reads the scope's vectors in one snapshot, `buildPage` rows a statement (so a large scope never
   * sits in memory twice over as query results), and builds a graph of them, unless a build is
   * running. The build holds one pooled connection until it is done.
   */
  #build(partition: Partition): void {
    if (partition.building || this.#closed) return;
    const { epoch } = partition;
    const stale = () => this.#closed || partition.epoch !== epoch;
    partition.error = undefined;
    partition.building = inTenant(
      this.#pool,
      partition.tenant,
      "vectorIndex",
      async (sql) => {
        const index = VectorIndex.create(partition.dimensions, this.options.hnsw);
        const map: RowMap = { rawRowidOf: new Map(), idOf: new Map() };
        const built = { ...partition, seq: 0 };
        let generation = 0;
        for (let full = true; full; ) {
          const rows = await readRows(sql, built, this.options.buildPage);
          generation = generationOf(rows);
          full = rows.length - 1 >= this.options.buildPage;
          for (let start = 1; start < rows.length; start += buildChunk) {
            if (stale()) return;
            add(built, index, map, rows.slice(start, start + buildChunk));
            await new Promise((resolve) => setImmediate(resolve));
          }
        }
        if (stale()) return;
        partition.index = index;
        partition.rows = map;
        partition.seq = built.seq;
        partition.generation = generation;
        this.#touch(partition);
        this.#bound(partition);
      },
      { readOnly: true },
    )
      .catch((error: unknown) => {
        partition.error = `vector index build failed: ${error instanceof Error ? error.message : String(error)}`;
      })
      .finally(() => {
        partition.building = undefined;
      });
  }
}

/**
 * One statement: first row the scope's vector generation (null when the scope has no state row)
 * and, with `visible`, the largest seq of the scope's rows (one step down the (scope, seq) btree);
 * then its vector rows with seq above the partition's, in seq order (at most `limit` of them), each
 * with its raw node's rowid and id. `vector_send` is pgvector's binary form: 4 header bytes, then
 * big-endian float32s.
 */
function rowsStatement(table: string, limit: number, visible: boolean): string {
  return `SELECT (SELECT vector_generation FROM index_state WHERE scope_key = $1) AS generation, NULL::bigint AS seq,
       NULL::bytea AS vector, NULL::bigint AS raw_node_rowid, NULL::text AS id${
         visible ? `, (SELECT max(seq) FROM ${table} WHERE scope_key = $1) AS visible` : ""
       }
     UNION ALL
     (SELECT NULL, v.seq, vector_send(v.embedding), v.raw_node_rowid, r.id${visible ? ", NULL" : ""}
      FROM ${table} v JOIN raw_nodes r ON r.rowid = v.raw_node_rowid
      WHERE v.scope_key = $1 AND v.seq > $2 ORDER BY v.seq LIMIT ${Math.max(1, Math.trunc(limit))})`;
}

function readRows(sql: Sql, partition: Pick<Partition, "table" | "scopeKey" | "seq">, limit: number) {
  return sql.query<CatchUpRow>(rowsStatement(partition.table, limit, false), [partition.scopeKey, partition.seq]);
}

/** The scope's vector generation in a `readRows` answer; 0 for a scope with no state row (it holds no vectors). */
function generationOf(rows: readonly CatchUpRow[]): number {
  return rows[0]?.generation ?? 0;
}

/**
 * Adds catch-up rows to `index` and moves the partition's seq past them. Each read returns every
 * row of the scope from some seq on, in commit order, so rows at or below the partition's seq
 * (added by a search that read meanwhile) are already in.
 */
function add(
  partition: Pick<Partition, "seq" | "dimensions">,
  index: VectorIndex,
  map: RowMap,
  rows: readonly CatchUpRow[],
): void {
  const fresh = rows.filter((row) => (row.seq as number) > partition.seq);
  if (fresh.length === 0) return;
  const { dimensions } = partition;
  const vectors = new Float32Array(fresh.length * dimensions);
  const seqs: number[] = [];
  fresh.forEach((row, position) => {
    vectors.set(vectorFromSend(row.vector as Buffer), position * dimensions);
    seqs.push(row.seq as number);
    map.rawRowidOf.set(row.seq as number, row.raw_node_rowid as number);
    map.idOf.set(row.raw_node_rowid as number, row.id as string);
  });
  index.upsert(seqs, vectors);
  partition.seq = seqs[seqs.length - 1] as number;
}
