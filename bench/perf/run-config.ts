import { rmSync } from "node:fs";
import os from "node:os";
import cliProgress from "cli-progress";
import { type Scope, scopeKey } from "../../src/core/scope.ts";
import { Memory } from "../../src/memory.ts";
import { createModels } from "../../src/models/profiles.ts";
import type { Models } from "../../src/models/provider.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { VectorIndexStatus } from "../../src/store/sqlite/vector-index-status.ts";
import type { Store } from "../../src/store/store.ts";
import { vectorFromBlob } from "../../src/store/vector-index.ts";
import type { VectorIndexOptions } from "../../src/store/vector-index-options.ts";
import { corpusTexts, generateQueries, generateSessions, makeImagePool } from "./corpus.ts";
import {
  bruteForceTopK,
  exactScorer,
  type Latency,
  latency,
  recallAtK,
  rowsByKey,
  type VectorMatrix,
} from "./stats.ts";

export type ProfileName = "hash" | "local";

export interface PerfConfig {
  readonly profile: ProfileName;
  /** Raw nodes (turns) ingested into one scope. */
  readonly size: number;
  readonly queries: number;
  /** Share of turns that carry a small image. */
  readonly imageShare: number;
  /** Texts the embedder embeds on its own, for its batch throughput (the first of the corpus). */
  readonly embedSample: number;
  /** Queries timed against the exact references (vec0 and the JS scan), which are slow at scale. */
  readonly exactQueries: number;
  /** Folder for the store; removed afterwards unless `keepStore`. */
  readonly workDir: string;
  readonly keepStore: boolean;
  /** Sessions per `Memory.addSessions` call in the bulk ingest row (0: no bulk row). */
  readonly bulkBatch?: number;
}

export interface PerfResult {
  readonly profile: ProfileName;
  readonly size: number;
  readonly sessions: number;
  readonly images: number;
  readonly command: string;
  readonly machine: { readonly cpu: string; readonly cores: number; readonly node: string; readonly os: string };
  readonly date: string;
  /** `Memory.addSession`, one session per call (what issue 11 compares across stores). */
  readonly ingest: { readonly seconds: number; readonly rawNodesPerSecond: number };
  /**
   * The same corpus into a second fresh store through `Memory.addSessions`, `sessionsPerCall` sessions
   * a call (one transaction each, maintenance on); absent in results from before it or with `--bulk-batch 0`.
   */
  readonly bulkIngest?: {
    readonly seconds: number;
    readonly rawNodesPerSecond: number;
    readonly sessionsPerCall: number;
  };
  /** The text embedder alone, batched at its maxBatchSize, on the same texts; `ratio` = ingest ÷ this. */
  readonly embedder: {
    readonly texts: number;
    readonly seconds: number;
    readonly textsPerSecond: number;
    readonly ingestRatio: number;
  };
  /** Per vector space searched by a text query: whether its ANN index was used and how long it took to build. */
  readonly indexes: readonly (VectorIndexStatus & { readonly space: string; readonly buildSeconds: number | null })[];
  readonly annOptions: VectorIndexOptions;
  /** Memory.search over `queries` queries: pack.timings (searchMs excludes the query embedding). */
  readonly search: { readonly queries: number; readonly searchMs: Latency; readonly embedMs: Latency };
  /** The same queries in `tri-path` mode (direct channels only, no routing); absent in results from before routing. */
  readonly triPath?: { readonly queries: number; readonly searchMs: Latency; readonly embedMs: Latency };
  /** Store calls timed one by one (same queries, embeddings precomputed). */
  readonly channels: {
    readonly denseMs: Latency;
    readonly bm25Ms: Latency;
    readonly imageTextBm25Ms: Latency;
    /** Dense and BM25 at the depths a routed search asks for (400 and 100). */
    readonly denseDeepMs?: Latency;
    readonly bm25DeepMs?: Latency;
    readonly vec0ExactMs: Latency;
    readonly bruteForceMs: Latency;
  };
  /** Dense text channel (ANN where used) against the exact JS scan, ties counted as hits. */
  readonly recallAt10: number;
  /** process.resourceUsage().maxRSS after ingest, index builds and searches, before the exact references load. */
  readonly peakRssMb: number;
}

export const scope: Scope = { tenant: "bench", user: "perf" };
const warmupQueries = 10;

/** One profile at one size, end to end through the real SDK path. */
export async function runConfig(config: PerfConfig, command: string): Promise<PerfResult> {
  const models = await loadModels(config.profile);
  rmSync(config.workDir, { recursive: true, force: true });
  const store = await SqliteStore.open({ path: config.workDir });
  const memory = await Memory.open({ store, models });
  try {
    const ingested = await ingest(memory, config);
    const embedder = await measureEmbedder(models, config);
    const indexes = await buildIndexes(store, memory);
    // After the first store's index builds, which run on another thread and would take its CPU.
    const bulkIngest = config.bulkBatch ? await ingestBulk(models, config, config.bulkBatch) : undefined;
    const queries = generateQueries(config.queries);
    // Cairn's default search: route through the active index + select under the budget (with the direct channels).
    const search = await measureSearch(memory, queries, "cairn");
    const triPath = await measureSearch(memory, queries, "tri-path");
    const vectors = await embedAll(models, queries);
    const channels = await measureChannels(store, memory, queries, vectors);
    const peakRssMb = process.resourceUsage().maxRSS / 1024;
    const exact = await measureExact(store, memory, config, queries, vectors, channels.dense);
    return {
      profile: config.profile,
      size: config.size,
      sessions: ingested.sessions,
      images: ingested.images,
      triPath,
      command,
      machine: {
        cpu: os.cpus()[0]?.model ?? "unknown",
        cores: os.cpus().length,
        node: process.version,
        os: `${os.type()} ${os.release()}`,
      },
      date: new Date().toISOString(),
      ingest: { seconds: ingested.seconds, rawNodesPerSecond: config.size / ingested.seconds },
      ...(bulkIngest ? { bulkIngest } : {}),
      embedder: { ...embedder, ingestRatio: config.size / ingested.seconds / embedder.textsPerSecond },
      indexes,
      annOptions: store.vectorIndexes.options,
      search,
      channels: {
        denseMs: channels.denseMs,
        bm25Ms: channels.bm25Ms,
        imageTextBm25Ms: channels.imageTextBm25Ms,
        denseDeepMs: channels.denseDeepMs,
        bm25DeepMs: channels.bm25DeepMs,
        vec0ExactMs: exact.vec0ExactMs,
        bruteForceMs: exact.bruteForceMs,
      },
      recallAt10: exact.recallAt10,
      peakRssMb,
    };
  } finally {
    await memory.close();
    // Memory leaves models it was handed open; the local profile's worker threads would keep the process alive.
    await models.close();
    if (!config.keepStore) rmSync(config.workDir, { recursive: true, force: true });
  }
}

/** Thrown when a profile's models cannot load here; the driver skips that profile. */
export class ProfileUnavailable extends Error {}

export async function loadModels(profile: ProfileName): Promise<Models> {
  try {
    const models = await createModels(profile);
    // The local profile loads its weights lazily: embed once so a broken install fails here, not mid-run.
    await models.text.embed(["warm up"]);
    return models;
  } catch (error) {
    throw new ProfileUnavailable(`${profile} models do not load: ${(error as Error).message}`);
  }
}

export function progress(label: string, total: number): cliProgress.SingleBar {
  const bar = new cliProgress.SingleBar(
    {
      format: `${label.padEnd(22)} {bar} {percentage}% | {value}/{total} | {duration_formatted}`,
      hideCursor: true,
      // Piped (CI, logs): a line every 10 s instead of nothing.
      noTTYOutput: true,
      notTTYSchedule: 10_000,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  return bar;
}

/** `size` raw nodes of the perf corpus (hash profile, 5% images) into `memory`, `batch` sessions a call: for the pass benchmarks. */
export function ingestCorpus(memory: Memory, size: number, batch: number) {
  const config: PerfConfig = {
    profile: "hash",
    size,
    queries: 0,
    imageShare: 0.05,
    embedSample: 0,
    exactQueries: 0,
    workDir: "",
    keepStore: false,
  };
  return ingest(memory, config, batch);
}

/** The generated corpus through `addSession` (`batch` 1) or `addSessions`, `batch` sessions a call. */
export async function ingest(memory: Memory, config: PerfConfig, batch = 1) {
  const images = await makeImagePool(48);
  const bar = progress(`${config.profile} ingest${batch > 1 ? ` ×${batch}` : ""}`, config.size);
  let sessions = 0;
  let imageCount = 0;
  let pending: ReturnType<typeof generateSessions> extends Iterable<infer T> ? T[] : never = [];
  const flush = async () => {
    if (pending.length === 0) return;
    await memory.addSessions(scope, pending);
    bar.increment(pending.reduce((sum, session) => sum + session.turns.length, 0));
    pending = [];
  };
  const started = performance.now();
  for (const session of generateSessions({ rawNodes: config.size, imageShare: config.imageShare }, images)) {
    sessions++;
    imageCount += session.turns.filter((turn) => turn.images?.length).length;
    if (batch > 1) {
      pending.push(session);
      if (pending.length >= batch) await flush();
      continue;
    }
    await memory.addSession(scope, session);
    bar.increment(session.turns.length);
  }
  await flush();
  const seconds = (performance.now() - started) / 1000;
  bar.stop();
  return { seconds, sessions, images: imageCount };
}

/**
 * `addSessions` ingest: the same sessions, `batch` a call, into a fresh store beside the main one
 * (removed after), with the same models and maintenance on.
 */
export async function ingestBulk(models: Models, config: PerfConfig, batch: number) {
  const path = `${config.workDir}-bulk`;
  rmSync(path, { recursive: true, force: true });
  const store = await SqliteStore.open({ path });
  const memory = await Memory.open({ store, models });
  try {
    const ingested = await ingest(memory, config, batch);
    return { seconds: ingested.seconds, rawNodesPerSecond: config.size / ingested.seconds, sessionsPerCall: batch };
  } finally {
    await memory.close();
    rmSync(path, { recursive: true, force: true });
  }
}

export async function measureEmbedder(models: Models, config: PerfConfig) {
  const texts = corpusTexts({ rawNodes: Math.min(config.size, config.embedSample) });
  const batch = models.text.maxBatchSize;
  const bar = progress(`${config.profile} embedder alone`, texts.length);
  const started = performance.now();
  for (let start = 0; start < texts.length; start += batch) {
    const slice = texts.slice(start, start + batch);
    await models.text.embed(slice);
    bar.increment(slice.length);
  }
  const seconds = (performance.now() - started) / 1000;
  bar.stop();
  return { texts: texts.length, seconds, textsPerSecond: texts.length / seconds };
}

/** Builds (and waits for) every ANN index a text query will use, timing each. */
async function buildIndexes(store: SqliteStore, memory: Memory) {
  const results: PerfResult["indexes"][number][] = [];
  for (const space of [memory.spaces.text.name, memory.spaces.imageText.name]) {
    if (!store.space(space)) continue;
    const before = store.vectorIndexes.status(space, scope);
    let buildSeconds: number | null = null;
    if (before.vectors >= store.vectorIndexes.options.minVectors) {
      const started = performance.now();
      await store.vectorIndexes.ready(space, scope);
      buildSeconds = (performance.now() - started) / 1000;
    }
    results.push({ space, ...store.vectorIndexes.status(space, scope), buildSeconds });
  }
  return results;
}

export async function measureSearch(memory: Memory, queries: readonly string[], mode: "cairn" | "tri-path") {
  for (const query of queries.slice(0, warmupQueries)) await memory.search(scope, query, { mode });
  const searchMs: number[] = [];
  const embedMs: number[] = [];
  const bar = progress(`Memory.search (${mode})`, queries.length);
  for (const query of queries) {
    const pack = await memory.search(scope, query, { mode });
    searchMs.push(pack.timings.searchMs);
    embedMs.push(pack.timings.embedMs);
    bar.increment();
  }
  bar.stop();
  return { queries: queries.length, searchMs: latency(searchMs), embedMs: latency(embedMs) };
}

export async function embedAll(models: Models, queries: readonly string[]): Promise<Float32Array[]> {
  const vectors: Float32Array[] = [];
  for (let start = 0; start < queries.length; start += models.text.maxBatchSize) {
    vectors.push(...(await models.text.embed(queries.slice(start, start + models.text.maxBatchSize))));
  }
  return vectors;
}

async function timed<T>(run: () => Promise<T>, samples: number[]): Promise<T> {
  const started = performance.now();
  const result = await run();
  samples.push(performance.now() - started);
  return result;
}

/** The depths of a routed search's direct passes (route/routed-search.ts: lexicalDepth, denseDepth). */
const routedDenseDepth = 400;
const routedLexicalDepth = 100;

export async function measureChannels(
  store: Store,
  memory: Memory,
  queries: readonly string[],
  vectors: readonly Float32Array[],
) {
  const scoped = store.forScope(scope);
  const space = memory.spaces.text.name;
  const samples = {
    dense: [] as number[],
    bm25: [] as number[],
    imageText: [] as number[],
    denseDeep: [] as number[],
    bm25Deep: [] as number[],
  };
  const dense: string[][] = [];
  const denseScores: number[][] = [];
  const bar = progress("store channels", queries.length);
  for (const [index, query] of queries.entries()) {
    const vector = vectors[index] as Float32Array;
    const hits = await timed(() => scoped.searchVectors(space, vector, { limit: 10 }), samples.dense);
    dense.push(hits.map((hit) => hit.id));
    denseScores.push(hits.map((hit) => hit.score));
    await timed(() => scoped.searchLexical("text", query, { limit: 10 }), samples.bm25);
    await timed(() => scoped.searchLexical("imageText", query, { limit: 10 }), samples.imageText);
    // The depths a routed (`cairn`) search asks for (route/routed-search.ts): what one such search costs per channel.
    await timed(() => scoped.searchVectors(space, vector, { limit: routedDenseDepth }), samples.denseDeep);
    await timed(() => scoped.searchLexical("text", query, { limit: routedLexicalDepth }), samples.bm25Deep);
    bar.increment();
  }
  bar.stop();
  return {
    dense,
    denseScores,
    denseMs: latency(samples.dense),
    bm25Ms: latency(samples.bm25),
    imageTextBm25Ms: latency(samples.imageText),
    denseDeepMs: latency(samples.denseDeep),
    bm25DeepMs: latency(samples.bm25Deep),
  };
}

/** The references: vec0's exact KNN (what searches cost before the ANN) and a plain JS scan. */
async function measureExact(
  store: SqliteStore,
  memory: Memory,
  config: PerfConfig,
  queries: readonly string[],
  vectors: readonly Float32Array[],
  dense: readonly string[][],
) {
  const space = memory.spaces.text.name;
  const matrix = readMatrix(store, space);
  const rowOf = rowsByKey(matrix);
  const exactStore = await SqliteStore.open({
    path: config.workDir,
    vectorIndex: { minVectors: Number.POSITIVE_INFINITY },
  });
  try {
    const vec0Samples: number[] = [];
    const bruteSamples: number[] = [];
    let recallSum = 0;
    const bar = progress("exact references", queries.length);
    for (const [index, vector] of vectors.entries()) {
      const timedHere = index < config.exactQueries;
      const started = performance.now();
      const exact = bruteForceTopK(matrix, vector, 10);
      if (timedHere) bruteSamples.push(performance.now() - started);
      if (timedHere) {
        await timed(() => exactStore.forScope(scope).searchVectors(space, vector, { limit: 10 }), vec0Samples);
      }
      recallSum += recallAtK(dense[index] ?? [], exact, exactScorer(matrix, rowOf, vector));
      bar.increment();
    }
    bar.stop();
    return {
      vec0ExactMs: latency(vec0Samples),
      bruteForceMs: latency(bruteSamples),
      recallAt10: recallSum / queries.length,
    };
  } finally {
    await exactStore.close();
  }
}

/** Every vector of a scope (the bench scope by default) in one text space, keyed by raw-node id, straight from vec0. */
export function readMatrix(store: SqliteStore, space: string, of: Scope = scope): VectorMatrix {
  const row = store.space(space);
  if (!row) throw new Error(`no vector space ${space}`);
  const rows = store.db
    .prepare(
      `SELECT r.id, v.embedding FROM ${row.table_name} v JOIN raw_nodes r ON r.rowid = v.rowid WHERE v.scope_key = ?`,
    )
    .raw()
    .all(scopeKey(of)) as [string, Buffer][];
  const values = new Float32Array(rows.length * row.dimensions);
  rows.forEach(([, blob], index) => {
    values.set(vectorFromBlob(blob, row.dimensions), index * row.dimensions);
  });
  return { keys: rows.map(([id]) => id), dimensions: row.dimensions, values };
}
