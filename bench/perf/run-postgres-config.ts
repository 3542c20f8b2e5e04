import os from "node:os";
import { openBenchPostgres } from "../../src/bench/postgres/bench-postgres.ts";
import { Memory } from "../../src/memory.ts";
import type { Models } from "../../src/models/provider.ts";
import { openPostgresStore } from "../../src/store/open-store.ts";
import { defaultAnnOptions } from "../../src/store/postgres/ann-indexes.ts";
import { defaultVectorSearch, type PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { generateQueries } from "./corpus.ts";
import {
  embedAll,
  ingest,
  ingestCorpus,
  loadModels,
  measureChannels,
  measureSearch,
  type PerfConfig,
  type PerfResult,
  progress,
  scope,
} from "./run-config.ts";
import { type Latency, latency } from "./stats.ts";

/** What a Postgres configuration measures: the SQLite result's comparable parts, on the Postgres store. */
export interface PostgresPerfResult
  extends Pick<PerfResult, "profile" | "size" | "sessions" | "images" | "command" | "machine" | "date" | "ingest"> {
  readonly store: "postgres";
  /** Where the database ran (a throwaway cluster on this machine, or CAIRN_BENCH_POSTGRES_URL). */
  readonly server: string;
  readonly vectorSearch: typeof defaultVectorSearch;
  readonly search: PerfResult["search"];
  readonly triPath: NonNullable<PerfResult["triPath"]>;
  readonly channels: {
    readonly denseMs: Latency;
    readonly bm25Ms: Latency;
    readonly imageTextBm25Ms: Latency;
    readonly denseDeepMs?: Latency;
    readonly bm25DeepMs?: Latency;
    /** The same dense search forced to an exact scan of the scope (the first `exactQueries` queries). */
    readonly exactScanMs: Latency;
    /** A seam call reading nothing (`readAudit({ limit: 0 })`): pool, BEGIN + tenant wall, a statement returning no row, COMMIT — a call's floor. */
    readonly transactionFloorMs?: Latency;
  };
  /** Dense top 10 (the in-process ANN index where used) against the store's own exact scan on the same queries (no tie handling). */
  readonly recallAt10: number;
  /** The same with ties counted as hits (a hit as close as the exact 10th), as SQLite's recall is measured. */
  readonly recallAt10Ties: number;
  /** The in-process ANN index's settings (decision 025), and the seconds its build took before the searches. */
  readonly vectorIndex: typeof defaultAnnOptions;
  readonly indexBuildSeconds: number;
  readonly peakRssMb: number;
}

/**
 * One profile at one size on the Postgres store, through the same SDK path, corpus and queries as
 * `runConfig` (the SQLite one), in a fresh database. The client process (this one) and the server
 * share the machine's cores.
 */
export async function runPostgresConfig(config: PerfConfig, command: string): Promise<PostgresPerfResult> {
  const models = await loadModels(config.profile);
  const postgres = await openBenchPostgres();
  try {
    const url = await postgres.freshDatabase();
    const store = await openPostgresStore({ url });
    const memory = await Memory.open({ store, models });
    try {
      const ingested = await ingest(memory, config);
      // As the SQLite run waits for its ANN index: searches are timed on a built one.
      const buildStarted = performance.now();
      for (const space of [memory.spaces.text.name, memory.spaces.imageText.name]) {
        if (await (store as PostgresStore).vectorSpaces().then((all) => all.some((known) => known.name === space)))
          await (store as PostgresStore).vectorIndexReady(space, scope);
      }
      const indexBuildSeconds = (performance.now() - buildStarted) / 1000;
      const queries = generateQueries(config.queries);
      const search = await measureSearch(memory, queries, "cairn");
      const triPath = await measureSearch(memory, queries, "tri-path");
      const vectors = await embedAll(models, queries);
      const channels = await measureChannels(store, memory, queries, vectors);
      const peakRssMb = process.resourceUsage().maxRSS / 1024;
      const floor: number[] = [];
      for (let index = 0; index < config.queries; index++) {
        const started = performance.now();
        // Not readSessions({ ids: [] }): since decision 026 that answers without opening a transaction.
        await store.forScope(scope).readAudit({ limit: 0 });
        floor.push(performance.now() - started);
      }
      const exact = await measureExactScan(url, memory, config, vectors, channels.dense, channels.denseScores);
      return {
        store: "postgres",
        profile: config.profile,
        size: config.size,
        sessions: ingested.sessions,
        images: ingested.images,
        command,
        machine: {
          cpu: os.cpus()[0]?.model ?? "unknown",
          cores: os.cpus().length,
          node: process.version,
          os: `${os.type()} ${os.release()}`,
        },
        date: new Date().toISOString(),
        server: postgres.description,
        vectorSearch: defaultVectorSearch,
        ingest: { seconds: ingested.seconds, rawNodesPerSecond: config.size / ingested.seconds },
        search,
        triPath,
        channels: {
          denseMs: channels.denseMs,
          bm25Ms: channels.bm25Ms,
          imageTextBm25Ms: channels.imageTextBm25Ms,
          denseDeepMs: channels.denseDeepMs,
          bm25DeepMs: channels.bm25DeepMs,
          exactScanMs: exact.exactScanMs,
          transactionFloorMs: latency(floor),
        },
        recallAt10: exact.recallAt10,
        recallAt10Ties: exact.recallAt10Ties,
        vectorIndex: defaultAnnOptions,
        indexBuildSeconds,
        peakRssMb,
      };
    } finally {
      await memory.close();
    }
  } finally {
    await models.close();
    await postgres.close();
  }
}

/** A second store on the same database that always scans the scope exactly: the reference for recall. */
async function measureExactScan(
  url: string,
  memory: Memory,
  config: PerfConfig,
  vectors: readonly Float32Array[],
  dense: readonly string[][],
  denseScores: readonly number[][],
) {
  const exactStore = await openPostgresStore({ url, vectorSearch: { exactBelow: 1_000_000_000 } });
  try {
    const scoped = exactStore.forScope(scope);
    const samples: number[] = [];
    let recallSum = 0;
    let tiesSum = 0;
    const count = Math.min(config.exactQueries, vectors.length);
    const bar = progress("exact scan (postgres)", count);
    for (const [index, vector] of vectors.slice(0, count).entries()) {
      const started = performance.now();
      const exact = await scoped.searchVectors(memory.spaces.text.name, vector, { limit: 10 });
      samples.push(performance.now() - started);
      const found = new Set(dense[index] ?? []);
      recallSum += exact.filter((hit) => found.has(hit.id)).length / Math.max(1, exact.length);
      const kth = (exact.at(-1)?.score ?? Number.NEGATIVE_INFINITY) - 1e-5;
      const ids = new Set(exact.map((hit) => hit.id));
      const scores = denseScores[index] ?? [];
      const tied = (dense[index] ?? []).filter((id, rank) => ids.has(id) || (scores[rank] ?? -2) >= kth);
      tiesSum += tied.slice(0, exact.length).length / Math.max(1, exact.length);
      bar.increment();
    }
    bar.stop();
    return {
      exactScanMs: latency(samples),
      recallAt10: count ? recallSum / count : Number.NaN,
      recallAt10Ties: count ? tiesSum / count : Number.NaN,
    };
  } finally {
    await exactStore.close();
  }
}

/** What `withPostgresCorpus` hands its run: the database, the store and memory on it, the models, the ingest time. */
export interface PostgresCorpus {
  readonly url: string;
  readonly store: PostgresStore;
  readonly memory: Memory;
  readonly models: Models;
  readonly ingestSeconds: number;
}

/**
 * A fresh database holding `size` raw nodes of the perf corpus (hash models, `addSessions` `batch`
 * sessions a call), handed to `run`; everything is closed after. For the Postgres pass benchmarks.
 */
export async function withPostgresCorpus<T>(
  size: number,
  batch: number,
  run: (corpus: PostgresCorpus) => Promise<T>,
): Promise<T> {
  const models = await loadModels("hash");
  const postgres = await openBenchPostgres();
  try {
    const url = await postgres.freshDatabase();
    const store = (await openPostgresStore({ url })) as PostgresStore;
    const memory = await Memory.open({ store, models });
    try {
      const ingested = await ingestCorpus(memory, size, batch);
      console.log(`ingested ${size} raw nodes in ${ingested.seconds.toFixed(1)} s`);
      return await run({ url, store, memory, models, ingestSeconds: ingested.seconds });
    } finally {
      await memory.close();
    }
  } finally {
    await models.close();
    await postgres.close();
  }
}
