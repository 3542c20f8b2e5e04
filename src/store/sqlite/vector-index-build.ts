/**
 * Building a partition's HNSW index from its vec0 rows. At 100k vectors that takes seconds of CPU
 * (and reading the rows alone ~1 s), so it runs in a worker thread with its own read-only
 * connection; the main thread keeps answering searches exactly from vec0 meanwhile.
 */
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import BetterSqlite3, { type Database } from "better-sqlite3";
import * as sqliteVec from "sqlite-vec";
import { spawnModuleWorker } from "../../core/module-worker.ts";
import { type HnswOptions, VectorIndex, vectorFromBlob } from "../vector-index.ts";

export interface BuildRequest {
  readonly databasePath: string;
  readonly table: string;
  readonly scopeKey: string;
  readonly dimensions: number;
  readonly hnsw: HnswOptions;
  /** Where the worker saves the index; the caller loads it from there. */
  readonly outputPath: string;
}

export interface BuildResult {
  readonly count: number;
  readonly maxRowid: number;
}

type WorkerReply = ({ ok: true } & BuildResult) | { ok: false; message: string };

const workerTag = "cairn:vector-index-build";

/** Rows handed to usearch per call: large enough for its threads, small enough to bound memory. */
const chunkRows = 8_192;

/**
 * Reads every vector of one (table, scope) partition in a single statement (one consistent snapshot)
 * and inserts it into a fresh index.
 */
export function buildFromVec0(
  db: Database,
  request: Pick<BuildRequest, "table" | "scopeKey" | "dimensions" | "hnsw">,
): VectorIndex {
  const index = VectorIndex.create(request.dimensions, request.hnsw);
  const rows = db
    .prepare(`SELECT rowid, embedding FROM ${request.table} WHERE scope_key = ?`)
    .raw()
    .iterate(request.scopeKey) as IterableIterator<[number | bigint, Buffer]>;
  let rowids: number[] = [];
  let vectors = new Float32Array(chunkRows * request.dimensions);
  for (const [rowid, blob] of rows) {
    vectors.set(vectorFromBlob(blob, request.dimensions), rowids.length * request.dimensions);
    rowids.push(Number(rowid));
    if (rowids.length === chunkRows) {
      index.upsert(rowids, vectors);
      rowids = [];
      vectors = new Float32Array(chunkRows * request.dimensions);
    }
  }
  index.upsert(rowids, vectors.subarray(0, rowids.length * request.dimensions));
  return index;
}

/** Builds in a worker thread and saves the index to `request.outputPath`. */
export function buildInWorker(request: BuildRequest): Promise<BuildResult> {
  return new Promise((resolve, reject) => {
    const worker = spawnModuleWorker(import.meta.url, { tag: workerTag, request });
    let settled = false;
    worker.once("message", (reply: WorkerReply) => {
      settled = true;
      if (reply.ok) resolve({ count: reply.count, maxRowid: reply.maxRowid });
      else reject(new Error(reply.message));
      void worker.terminate();
    });
    worker.once("error", (error) => {
      settled = true;
      reject(error);
    });
    worker.once("exit", (code) => {
      if (!settled) reject(new Error(`vector index build worker exited with code ${code}`));
    });
  });
}

function serve(request: BuildRequest): void {
  let reply: WorkerReply;
  try {
    const db = new BetterSqlite3(request.databasePath, { readonly: true, fileMustExist: true });
    try {
      sqliteVec.load(db);
      const index = buildFromVec0(db, request);
      index.save(request.outputPath);
      reply = { ok: true, count: index.size, maxRowid: index.maxRowid };
    } finally {
      db.close();
    }
  } catch (error) {
    reply = { ok: false, message: error instanceof Error ? error.message : String(error) };
  }
  parentPort?.postMessage(reply);
}

if (!isMainThread && (workerData as { tag?: string } | null)?.tag === workerTag) {
  serve((workerData as { request: BuildRequest }).request);
}
