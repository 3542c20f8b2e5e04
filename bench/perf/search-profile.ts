/**
 * Times the default search on a store kept by `npm run bench:perf -- --keep` (hash profile), for
 * profiling one change at a time without ingesting again (wall and CPU milliseconds per search):
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/perf/search-profile.ts bench/results/tmp/hash-100000
 *   node --import tsx bench/perf/search-profile.ts <store> 200 cairn '{"sessionWeight":0}'  # routing settings for an A/B
 *   node --import tsx bench/perf/search-profile.ts <store> 200 cairn --read-workers 2  # the passes in worker threads
 *   node --import tsx bench/perf/search-profile.ts <store> 200 cairn --ef 512  # another HNSW ef_search than the default
 */
import { parseArgs } from "node:util";
import { Memory } from "../../src/memory.ts";
import { createModels } from "../../src/models/profiles.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { defaultVectorIndexOptions } from "../../src/store/vector-index-options.ts";
import { generateQueries } from "./corpus.ts";
import { scope } from "./run-config.ts";
import { latency } from "./stats.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { "read-workers": { type: "string", default: "0" }, ef: { type: "string" } },
});
const path = positionals[0];
if (!path)
  throw new Error(
    "usage: search-profile.ts <kept store folder> [queries] [mode] [routing JSON] [--read-workers N] [--ef N]",
  );
const count = Number(positionals[1] ?? 200);
const mode = (positionals[2] ?? "cairn") as "cairn" | "tri-path";
const routing = positionals[3] ? JSON.parse(positionals[3]) : undefined;
const readWorkers = Number(values["read-workers"]);
const models = await createModels("hash");
// --ef fixes ef_search at every size (no steps); without it the default, steps included.
const hnsw = values.ef
  ? { ...defaultVectorIndexOptions.hnsw, expansionSearch: Number(values.ef), expansionSearchSteps: [] }
  : defaultVectorIndexOptions.hnsw;
const store = await SqliteStore.open({ path, readWorkers, vectorIndex: { hnsw } });
const memory = await Memory.open({ store, models });
await store.vectorIndexes.ready(memory.spaces.text.name, scope);
const queries = generateQueries(count);
for (const query of queries.slice(0, 20)) await memory.search(scope, query, { mode, routing });
// Wall time moves with the machine's load; the process's CPU time per search (user + system, every
// thread) moves much less, so A/B runs on a shared machine compare that.
const samples: number[] = [];
const cpu: number[] = [];
for (const query of queries) {
  const before = process.cpuUsage();
  samples.push((await memory.search(scope, query, { mode, routing })).timings.searchMs);
  const used = process.cpuUsage(before);
  cpu.push((used.user + used.system) / 1000);
}
console.log(
  JSON.stringify({
    mode,
    routing,
    readWorkers,
    ef: values.ef ? hnsw.expansionSearch : "default",
    queries: count,
    searchMs: latency(samples),
    cpuMs: latency(cpu),
  }),
);
await memory.close();
await models.close();
