/**
 * pgvector HNSW build parameters against recall on the perf corpus's own vectors, at a size where
 * the full `bench:perf --store postgres --hnsw-sweep` (which ingests through the SDK first) is too
 * slow for a shared machine:
 *
 *   npx tsx bench/postgres-hnsw.ts --size 100000 --builds 16:64,32:128 --ef 40,100,200,400 [--depths 10,100]
 *
 * The corpus's turn texts (bench/perf/corpus.ts, the same seed as bench:perf) are embedded with the
 * hash profile and loaded straight into one table shaped like the store's vector tables (a scope
 * column and a `vector(d)` column), in a fresh database of a throwaway cluster (or
 * CAIRN_BENCH_POSTGRES_URL). For each `m:ef_construction` the HNSW index is built over all rows, and
 * for each ef_search the store's approximate query (scope filter, iterative scan in relaxed order,
 * top 10) is timed and compared with the exact top 10 computed in JS: by ids, and with ties at the
 * 10th similarity counted as hits, as `bench:perf` measures SQLite's ANN. The store itself adds a
 * transaction and a join to raw nodes around this query; its index grows by inserts, these are
 * bulk builds. Writes `<out>/postgres-hnsw-<size>.json` and `.md`.
 */
import { writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { openBenchPostgres } from "../src/bench/postgres/bench-postgres.ts";
import { createModels } from "../src/models/profiles.ts";
import { corpusTexts, generateQueries } from "./perf/corpus.ts";
import { embedAll, progress } from "./perf/run-config.ts";
import { bruteForceTopK, latency, type Scored } from "./perf/stats.ts";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "100000" },
    builds: { type: "string", default: "16:64,32:128" },
    ef: { type: "string", default: "40,100,200,400" },
    /** Rows asked of the index per query; the top 10 of them by exact distance are scored (10: the store's ask). */
    depths: { type: "string", default: "10" },
    queries: { type: "string", default: "100" },
    out: { type: "string", default: "bench/results" },
  },
});

const size = Number(values.size);
const builds = parseBuilds(values.builds);
const efSearches = values.ef.split(",").map(Number);
const depths = values.depths.split(",").map(Number);
const queryCount = Number(values.queries);
const scopeKey = "bench/perf";
/** Memory for each CREATE INDEX, so the graph is built in memory. */
const maintenanceWorkMem = "1GB";

const started = new Date();
const loadBefore = os.loadavg()[0] ?? 0;
const models = await createModels("hash");
const texts = corpusTexts({ rawNodes: size, imageShare: 0.05 });
const embedBar = progress("embed corpus", texts.length);
const vectors: Float32Array[] = [];
for (let start = 0; start < texts.length; start += 1000) {
  vectors.push(...(await embedAll(models, texts.slice(start, start + 1000))));
  embedBar.update(vectors.length);
}
embedBar.stop();
const queries = generateQueries(queryCount);
const queryVectors = await embedAll(models, queries);
await models.close();
const dimensions = vectors[0]?.length ?? 0;
const matrix = {
  keys: vectors.map((_, index) => String(index)),
  dimensions,
  values: new Float32Array(size * dimensions),
};
vectors.forEach((vector, index) => {
  matrix.values.set(vector, index * dimensions);
});
const exactBar = progress("exact top 10 (JS)", queryVectors.length);
const exact: Scored[][] = [];
for (const vector of queryVectors) {
  exact.push(bruteForceTopK(matrix, vector, 10));
  exactBar.increment();
}
exactBar.stop();

const postgres = await openBenchPostgres();
const rows: {
  m: number;
  efConstruction: number;
  buildSeconds: number;
  indexMb: number;
  efSearch: number;
  depth: number;
  p50: number;
  p95: number;
  recallAt10: number;
  recallAt10Ties: number;
}[] = [];
try {
  const client = new pg.Client({ connectionString: await postgres.freshDatabase() });
  await client.connect();
  try {
    await client.query(
      `CREATE TABLE sweep (id integer PRIMARY KEY, scope_key text NOT NULL, embedding vector(${dimensions}) NOT NULL)`,
    );
    const loadBar = progress("load vectors", size);
    for (let start = 0; start < size; start += 2000) {
      const batch = vectors.slice(start, start + 2000);
      await client.query("INSERT INTO sweep SELECT id, $3, v::vector FROM unnest($1::int[], $2::text[]) AS t (id, v)", [
        batch.map((_, index) => start + index),
        batch.map((vector) => `[${Array.from(vector).join(",")}]`),
        scopeKey,
      ]);
      loadBar.update(start + batch.length);
    }
    loadBar.stop();
    await client.query("VACUUM ANALYZE sweep");
    await client.query(`SET maintenance_work_mem = '${maintenanceWorkMem}'`);
    await client.query("SET hnsw.iterative_scan = relaxed_order");
    for (const build of builds) {
      console.log(`building HNSW m = ${build.m}, ef_construction = ${build.efConstruction}`);
      await client.query("DROP INDEX IF EXISTS sweep_hnsw");
      const buildStarted = performance.now();
      await client.query(
        `CREATE INDEX sweep_hnsw ON sweep USING hnsw (embedding vector_cosine_ops) WITH (m = ${build.m}, ef_construction = ${build.efConstruction})`,
      );
      const buildSeconds = (performance.now() - buildStarted) / 1000;
      const bytes = await client.query<{ bytes: string }>("SELECT pg_relation_size('sweep_hnsw') AS bytes");
      const indexMb = Number(bytes.rows[0]?.bytes ?? 0) / 1024 / 1024;
      for (const efSearch of efSearches.flatMap((ef) => depths.map((depth) => ({ ef, depth })))) {
        await client.query(`SET hnsw.ef_search = ${efSearch.ef}`);
        const samples: number[] = [];
        let strict = 0;
        let ties = 0;
        const bar = progress(
          `m ${build.m} efC ${build.efConstruction} ef ${efSearch.ef} depth ${efSearch.depth}`,
          queryVectors.length,
        );
        for (const [index, vector] of queryVectors.entries()) {
          const literal = `[${Array.from(vector).join(",")}]`;
          const queryStarted = performance.now();
          const found = await client.query<{ id: number; distance: number }>(
            `SELECT id, embedding <=> $1::vector AS distance FROM sweep WHERE scope_key = $2
             ORDER BY embedding <=> $1::vector LIMIT $3`,
            [literal, scopeKey, efSearch.depth],
          );
          // relaxed_order: the rows come nearly sorted; the top 10 by exact distance are the answer.
          const top = [...found.rows].sort((left, right) => left.distance - right.distance).slice(0, 10);
          samples.push(performance.now() - queryStarted);
          const reference = exact[index] ?? [];
          const ids = new Set(reference.map((hit) => Number(hit.key)));
          const kth = (reference.at(-1)?.score ?? Number.NEGATIVE_INFINITY) - 1e-5;
          const k = Math.max(1, reference.length);
          strict += top.filter((row) => ids.has(row.id)).length / k;
          ties += top.filter((row) => ids.has(row.id) || 1 - row.distance >= kth).length / k;
          bar.increment();
        }
        bar.stop();
        const timing = latency(samples);
        rows.push({
          ...build,
          buildSeconds,
          indexMb,
          efSearch: efSearch.ef,
          depth: efSearch.depth,
          p50: timing.p50,
          p95: timing.p95,
          recallAt10: strict / queryVectors.length,
          recallAt10Ties: ties / queryVectors.length,
        });
        console.log(JSON.stringify(rows.at(-1)));
      }
    }
  } finally {
    await client.end();
  }
} finally {
  await postgres.close();
}

const command = `npx tsx bench/postgres-hnsw.ts ${process.argv.slice(2).join(" ")}`.trim();
const machine = `${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores, node ${process.version}; 1-minute load average ${loadBefore.toFixed(1)} at the start, ${(os.loadavg()[0] ?? 0).toFixed(1)} at the end`;
const distinct = new Set(texts).size;
const out = resolve(values.out);
const name = `postgres-hnsw-${size}`;
writeFileSync(
  join(out, `${name}.json`),
  `${JSON.stringify({ command, date: started.toISOString(), machine, size, distinctTexts: distinct, dimensions, queries: queryVectors.length, maintenanceWorkMem, rows }, null, 2)}\n`,
);
const ms = (value: number) => value.toFixed(value < 10 ? 2 : 1);
writeFileSync(
  join(out, `${name}.md`),
  [
    `# pgvector HNSW build parameters: ${size.toLocaleString("en-US")} vectors of the perf corpus`,
    "",
    `- command: \`${command}\``,
    `- date: ${started.toISOString()}; machine: ${machine} (the server shares the cores with this process)`,
    `- vectors: the hash profile's ${dimensions}-d text vectors of the perf corpus's ${size.toLocaleString("en-US")} turns (${distinct.toLocaleString("en-US")} distinct texts: the rest repeat one, so their vectors tie exactly), one scope; ${queryVectors.length} queries of bench:perf`,
    `- query: the store's approximate one (scope filter, \`hnsw.iterative_scan = relaxed_order\`, the top 10 by exact distance of the rows asked) on a bare table; bulk builds with maintenance_work_mem = ${maintenanceWorkMem}; exact top 10 from a JS scan`,
    "",
    "| m | ef_construction | build s | index MB | ef_search | rows asked | p50 ms | p95 ms | recall@10 (ids) | recall@10 (ties count) |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...rows.map(
      (row) =>
        `| ${row.m} | ${row.efConstruction} | ${row.buildSeconds.toFixed(1)} | ${row.indexMb.toFixed(0)} | ${row.efSearch} | ${row.depth} | ${ms(row.p50)} | ${ms(row.p95)} | ${row.recallAt10.toFixed(3)} | ${row.recallAt10Ties.toFixed(3)} |`,
    ),
    "",
  ].join("\n"),
);
console.log(`wrote ${join(out, `${name}.md`)}`);

/** `m:efConstruction,…` → build points. */
function parseBuilds(value: string): { m: number; efConstruction: number }[] {
  return value.split(",").map((pair) => {
    const [m, efConstruction] = pair.split(":").map(Number);
    if (!Number.isInteger(m) || !Number.isInteger(efConstruction)) throw new Error(`bad HNSW build ${pair} (m:ef)`);
    return { m: m as number, efConstruction: efConstruction as number };
  });
}
