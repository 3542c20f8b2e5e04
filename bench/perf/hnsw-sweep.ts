import pg from "pg";
import type { Memory } from "../../src/memory.ts";
import { openPostgresStore } from "../../src/store/open-store.ts";
import { defaultVectorSearch } from "../../src/store/postgres/postgres-store.ts";
import { progress, scope } from "./run-config.ts";
import { type Latency, latency } from "./stats.ts";

/** One HNSW build (pgvector's m and ef_construction) of the bench scope's text space. */
export interface HnswBuildPoint {
  readonly m: number;
  readonly efConstruction: number;
}

export interface HnswSweepRow extends HnswBuildPoint {
  /** Seconds to build the index over every vector of the space (CREATE INDEX, maintenance_work_mem below). */
  readonly buildSeconds: number;
  readonly indexMb: number;
  readonly efSearch: number;
  /** The store's dense search (one transaction, HNSW + iterative scan) over every query. */
  readonly denseMs: Latency;
  /** Top 10 against the exact scan of the scope, on the first `exactQueries` queries: ids only, and ties at the 10th distance counted as hits. */
  readonly recallAt10: number;
  readonly recallAt10Ties: number;
}

export interface HnswSweep {
  readonly table: string;
  readonly vectors: number;
  readonly exactQueries: number;
  readonly maintenanceWorkMem: string;
  readonly rows: readonly HnswSweepRow[];
}

/** Memory for each CREATE INDEX, so the graph is built in memory (pgvector warns and slows down when it does not fit). */
const maintenanceWorkMem = "1GB";

/** `m:efConstruction,…` → build points. */
export function parseBuilds(value: string): HnswBuildPoint[] {
  return value.split(",").map((pair) => {
    const [m, efConstruction] = pair.split(":").map(Number);
    if (!Number.isInteger(m) || !Number.isInteger(efConstruction)) throw new Error(`bad HNSW build ${pair} (m:ef)`);
    return { m: m as number, efConstruction: efConstruction as number };
  });
}

interface Scored {
  readonly id: string;
  readonly score: number;
}

/**
 * Rebuilds the text space's HNSW index of an ingested bench database once per build point and, for
 * each, times the store's dense search at each ef_search and measures its recall against the exact
 * scan of the scope (computed once). The same ingested vectors serve every point, so the sweep costs
 * index builds, not ingests. The store's own index grew by inserts; these are bulk builds.
 */
export async function sweepHnsw(
  url: string,
  memory: Memory,
  vectors: readonly Float32Array[],
  exactQueries: number,
  builds: readonly HnswBuildPoint[],
  efSearches: readonly number[],
): Promise<HnswSweep> {
  const spaceName = memory.spaces.text.name;
  const exactStore = await openPostgresStore({ url, vectorSearch: { exactBelow: 1_000_000_000 } });
  const count = Math.min(exactQueries, vectors.length);
  const exact: Scored[][] = [];
  try {
    const bar = progress("sweep: exact references", count);
    for (const vector of vectors.slice(0, count)) {
      exact.push(
        (await exactStore.forScope(scope).searchVectors(spaceName, vector, { limit: 10 })).map((hit) => ({
          id: hit.id,
          score: hit.score,
        })),
      );
      bar.increment();
    }
    bar.stop();
  } finally {
    await exactStore.close();
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const rows: HnswSweepRow[] = [];
  try {
    const [space] = (
      await client.query<{ table_name: string }>("SELECT table_name FROM vector_spaces WHERE name = $1", [spaceName])
    ).rows;
    if (!space) throw new Error(`no vector space ${spaceName}`);
    const table = space.table_name;
    await client.query(`SET maintenance_work_mem = '${maintenanceWorkMem}'`);
    // The bench role is bound by row-level security like the store: the bench tenant's rows only.
    await client.query(`SET cairn.tenant = '${scope.tenant}'`);
    for (const build of builds) {
      console.log(`sweep: building HNSW m = ${build.m}, ef_construction = ${build.efConstruction}`);
      await client.query(`DROP INDEX IF EXISTS ${table}_hnsw`);
      const started = performance.now();
      await client.query(
        `CREATE INDEX ${table}_hnsw ON ${table} USING hnsw (embedding vector_cosine_ops) WITH (m = ${build.m}, ef_construction = ${build.efConstruction})`,
      );
      const buildSeconds = (performance.now() - started) / 1000;
      const size = await client.query<{ bytes: string }>(`SELECT pg_relation_size('${table}_hnsw') AS bytes`);
      const indexMb = Number(size.rows[0]?.bytes ?? 0) / 1024 / 1024;
      for (const efSearch of efSearches) {
        const store = await openPostgresStore({ url, vectorSearch: { ...defaultVectorSearch, efSearch } });
        try {
          const scoped = store.forScope(scope);
          const samples: number[] = [];
          let strict = 0;
          let ties = 0;
          const bar = progress(`sweep: m ${build.m} efC ${build.efConstruction} ef ${efSearch}`, vectors.length);
          for (const [index, vector] of vectors.entries()) {
            const started = performance.now();
            const hits = await scoped.searchVectors(spaceName, vector, { limit: 10 });
            samples.push(performance.now() - started);
            const reference = exact[index];
            if (reference) {
              const ids = new Set(reference.map((hit) => hit.id));
              const kth = (reference.at(-1)?.score ?? Number.NEGATIVE_INFINITY) - 1e-5;
              const k = Math.max(1, reference.length);
              strict += hits.filter((hit) => ids.has(hit.id)).length / k;
              ties += hits.slice(0, k).filter((hit) => ids.has(hit.id) || hit.score >= kth).length / k;
            }
            bar.increment();
          }
          bar.stop();
          rows.push({
            ...build,
            buildSeconds,
            indexMb,
            efSearch,
            denseMs: latency(samples),
            recallAt10: count ? strict / count : Number.NaN,
            recallAt10Ties: count ? ties / count : Number.NaN,
          });
        } finally {
          await store.close();
        }
      }
    }
    const total = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
    return { table, vectors: Number(total.rows[0]?.n ?? 0), exactQueries: count, maintenanceWorkMem, rows };
  } finally {
    await client.end();
  }
}

/** The sweep as a markdown table. */
export function sweepMarkdown(sweep: HnswSweep, header: readonly string[]): string {
  const ms = (value: number) => value.toFixed(value < 10 ? 2 : 1);
  return [
    ...header,
    "",
    `${sweep.vectors.toLocaleString("en-US")} vectors in ${sweep.table} (one scope); recall on the first ${sweep.exactQueries} queries against the exact scan of the scope; latency of the store's dense search over every query; bulk builds with maintenance_work_mem = ${sweep.maintenanceWorkMem}.`,
    "",
    "| m | ef_construction | build s | index MB | ef_search | dense p50 ms | dense p95 ms | recall@10 (ids) | recall@10 (ties count) |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...sweep.rows.map(
      (row) =>
        `| ${row.m} | ${row.efConstruction} | ${row.buildSeconds.toFixed(1)} | ${row.indexMb.toFixed(0)} | ${row.efSearch} | ${ms(row.denseMs.p50)} | ${ms(row.denseMs.p95)} | ${row.recallAt10.toFixed(3)} | ${row.recallAt10Ties.toFixed(3)} |`,
    ),
    "",
  ].join("\n");
}
