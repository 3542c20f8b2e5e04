/**
 * The SQLite read pool (decision 023) A/B in one process, on one kept store: the same searches through
 * `Memory` over the store opened with `readWorkers: 0` (inline) and with the pool, alternating rounds.
 *
 *   npx tsx bench/read-pool.ts --store /tmp/perf-10k --preload 10000 --workers 2 --rounds 2 --concurrency 1,4
 *
 * Builds the store with the perf corpus (hash profile, seeded) if `--store` holds none, persists its ANN
 * indexes, then per round and concurrency: 200 searches, `concurrency` at a time, wall ms per search
 * (p50/p95/p99), searches per second, and the process's CPU ms per search (user + system, every thread).
 * Prints a Markdown table; `--out FILE` also writes it (never BENCHMARKS.md).
 */
import { existsSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Scope } from "../src/core/scope.ts";
import { Memory } from "../src/memory.ts";
import { createModels } from "../src/models/profiles.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { generateQueries, generateSessions, makeImagePool } from "./perf/corpus.ts";
import { percentile } from "./perf/stats.ts";

const { values } = parseArgs({
  options: {
    store: { type: "string" },
    preload: { type: "string", default: "10000" },
    workers: { type: "string", default: "2" },
    rounds: { type: "string", default: "2" },
    concurrency: { type: "string", default: "1,4" },
    searches: { type: "string", default: "200" },
    out: { type: "string" },
  },
});
if (!values.store) throw new Error("--store DIR is required (built there on first use)");
const path = resolve(values.store);
const scope: Scope = { tenant: "load", user: "ana" };
const workers = Number(values.workers);
const rounds = Number(values.rounds);
const concurrencies = (values.concurrency ?? "1").split(",").map(Number);
const searches = Number(values.searches);
const models = await createModels("hash");
const queries = generateQueries(searches + 50, 4321);

if (!existsSync(join(path, "cairn.db"))) {
  const store = await SqliteStore.open({ path });
  const memory = await Memory.open({ store, models });
  const images = await makeImagePool(48);
  for (const session of generateSessions({ rawNodes: Number(values.preload), imageShare: 0.05 }, images)) {
    await memory.addSession(scope, session);
  }
  for (const space of [memory.spaces.text.name, memory.spaces.imageText.name])
    await store.vectorIndexes.ready(space, scope);
  await memory.close();
}

interface Row {
  readonly round: number;
  readonly readWorkers: number;
  readonly concurrency: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly perSecond: number;
  readonly cpuMs: number;
}

async function measure(readWorkers: number, concurrency: number, round: number): Promise<Row> {
  const store = await SqliteStore.open({ path, readWorkers });
  const memory = await Memory.open({ store, models });
  try {
    // Warm: caches, statements, every worker's ANN indexes loaded.
    await Promise.all(queries.slice(0, 50).map((query) => memory.search(scope, query)));
    const times: number[] = [];
    const work = queries.slice(50, 50 + searches);
    let next = 0;
    const cpu = process.cpuUsage();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < work.length) {
          const query = work[next++] as string;
          const begin = performance.now();
          await memory.search(scope, query);
          times.push(performance.now() - begin);
        }
      }),
    );
    const wall = performance.now() - started;
    const used = process.cpuUsage(cpu);
    return {
      round,
      readWorkers,
      concurrency,
      p50: percentile(times, 50),
      p95: percentile(times, 95),
      p99: percentile(times, 99),
      perSecond: (times.length * 1000) / wall,
      cpuMs: (used.user + used.system) / 1000 / times.length,
    };
  } finally {
    await memory.close();
  }
}

const loadBefore = os.loadavg()[0] ?? 0;
const rows: Row[] = [];
for (let round = 1; round <= rounds; round++) {
  for (const concurrency of concurrencies) {
    // Alternating, the order flipped each round, so drift in the machine's load falls on both sides.
    const order = round % 2 === 1 ? [0, workers] : [workers, 0];
    for (const readWorkers of order) rows.push(await measure(readWorkers, concurrency, round));
  }
}
const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1));
const table = [
  `# SQLite read pool A/B (bench/read-pool.ts)`,
  "",
  `- command: \`npx tsx bench/read-pool.ts ${process.argv.slice(2).join(" ")}\``,
  `- ${os.cpus().length} cores, node ${process.version}; 1-minute load average ${loadBefore.toFixed(1)} before, ${(os.loadavg()[0] ?? 0).toFixed(1)} after`,
  `- ${searches} \`cairn\` searches per row (hash profile), after 50 warm-up ones; CPU = the process's user + system time, every thread, per search`,
  "",
  "| round | read workers | concurrent searches | p50 ms | p95 ms | p99 ms | searches/s | CPU ms / search |",
  "|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...rows.map(
    (row) =>
      `| ${row.round} | ${row.readWorkers} | ${row.concurrency} | ${ms(row.p50)} | ${ms(row.p95)} | ${ms(row.p99)} | ${row.perSecond.toFixed(1)} | ${ms(row.cpuMs)} |`,
  ),
  "",
].join("\n");
console.log(table);
if (values.out) writeFileSync(resolve(values.out), table);
await models.close();
