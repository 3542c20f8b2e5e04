/**
 * Does carrying tf, length and tenant in `lexical_postings`' primary key (Postgres migration 8) make
 * the store's BM25 cheaper? An A/B in one database, so a loaded machine moves both sides alike:
 *
 *   npx tsx bench/postgres-bm25-covering.ts --size 10000 --rounds 3
 *
 * Ingests the perf corpus (hash profile) through the SDK into a fresh database, VACUUMs it (so the
 * visibility map lets index-only scans skip the heap), then alternates rounds with the key as before
 * and as after migration 8 (`PRIMARY KEY (scope_key, field, lexeme, raw_node_rowid) INCLUDE (tf,
 * length, tenant)`), each rebuilt and vacuumed before its round, timing the store's `searchLexical`
 * at top 10 and top 100 for every query in each round. Prints the medians of the round p50s and
 * p95s; writes `<out>/postgres-bm25-covering.json`. (The first run, committed as that file, compared a
 * separate covering index with the plain key instead.)
 */
import { writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { openBenchPostgres } from "../src/bench/postgres/bench-postgres.ts";
import { Memory } from "../src/memory.ts";
import { openPostgresStore } from "../src/store/open-store.ts";
import { generateQueries } from "./perf/corpus.ts";
import { ingest, loadModels, scope } from "./perf/run-config.ts";
import { type Latency, latency } from "./perf/stats.ts";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "10000" },
    rounds: { type: "string", default: "3" },
    queries: { type: "string", default: "200" },
    out: { type: "string", default: "bench/results" },
  },
});
const size = Number(values.size);
const rounds = Number(values.rounds);
const loadBefore = os.loadavg()[0] ?? 0;
const models = await loadModels("hash");
const postgres = await openBenchPostgres();
const results: { round: number; covering: boolean; top10: Latency; top100: Latency }[] = [];
try {
  const url = await postgres.freshDatabase();
  const store = await openPostgresStore({ url });
  const memory = await Memory.open({ store, models });
  try {
    await ingest(memory, {
      profile: "hash",
      size,
      queries: 0,
      imageShare: 0.05,
      embedSample: 0,
      exactQueries: 0,
      workDir: "",
      keepStore: false,
    });
  } finally {
    await memory.close();
  }
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const queries = generateQueries(Number(values.queries));
  try {
    await admin.query("VACUUM ANALYZE lexical_postings");
    for (let round = 0; round < rounds; round++) {
      for (const covering of [false, true]) {
        // The primary key as before migration 8, or as after it (carrying tf, length and tenant).
        await admin.query(
          `ALTER TABLE lexical_postings DROP CONSTRAINT lexical_postings_pkey, ADD CONSTRAINT lexical_postings_pkey PRIMARY KEY (scope_key, field, lexeme, raw_node_rowid)${covering ? " INCLUDE (tf, length, tenant)" : ""}`,
        );
        await admin.query("VACUUM ANALYZE lexical_postings");
        const reader = await openPostgresStore({ url });
        try {
          const scoped = reader.forScope(scope);
          const top10: number[] = [];
          const top100: number[] = [];
          for (const query of queries) {
            let started = performance.now();
            await scoped.searchLexical("text", query, { limit: 10 });
            top10.push(performance.now() - started);
            started = performance.now();
            await scoped.searchLexical("text", query, { limit: 100 });
            top100.push(performance.now() - started);
          }
          results.push({ round, covering, top10: latency(top10), top100: latency(top100) });
          console.log(JSON.stringify(results.at(-1)));
        } finally {
          await reader.close();
        }
      }
    }
  } finally {
    await admin.end();
  }
} finally {
  await models.close();
  await postgres.close();
}
const median = (numbers: number[]) => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)] ?? Number.NaN;
const summary = Object.fromEntries(
  [false, true].map((covering) => {
    const side = results.filter((row) => row.covering === covering);
    return [
      covering ? "keyCarriesColumns" : "keyAsBefore",
      {
        top10p50: median(side.map((row) => row.top10.p50)),
        top10p95: median(side.map((row) => row.top10.p95)),
        top100p50: median(side.map((row) => row.top100.p50)),
        top100p95: median(side.map((row) => row.top100.p95)),
      },
    ];
  }),
);
console.log(JSON.stringify(summary, null, 2));
writeFileSync(
  join(resolve(values.out), "postgres-bm25-covering.json"),
  `${JSON.stringify(
    {
      command: `npx tsx bench/postgres-bm25-covering.ts ${process.argv.slice(2).join(" ")}`.trim(),
      date: new Date().toISOString(),
      machine: `${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores; load average ${loadBefore.toFixed(1)} at the start, ${(os.loadavg()[0] ?? 0).toFixed(1)} at the end`,
      size,
      summary,
      rounds: results,
    },
    null,
    2,
  )}\n`,
);
