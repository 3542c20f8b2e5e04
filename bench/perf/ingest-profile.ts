/**
 * Ingest alone, for profiling and A/B runs: `size` generated raw nodes through `Memory.addSession`
 * (maintenance on) into a fresh store, or with a third argument above 1 through `Memory.addSessions`
 * that many sessions a call, then the hash embedder alone on the same texts, so the ratio between
 * them holds on a loaded machine where absolute rates do not. Prints CPU seconds of the ingest too.
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/perf/ingest-profile.ts /tmp/store 10000 [sessions a call]
 */
import { rmSync } from "node:fs";
import { Memory } from "../../src/memory.ts";
import { createModels } from "../../src/models/profiles.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { ingest, measureEmbedder } from "./run-config.ts";

const path = process.argv[2];
if (!path) throw new Error("usage: ingest-profile.ts <new store folder> [raw nodes]");
const size = Number(process.argv[3] ?? 10_000);
const batch = Number(process.argv[4] ?? 1);
rmSync(path, { recursive: true, force: true });
const models = await createModels("hash");
const store = await SqliteStore.open({ path });
const memory = await Memory.open({ store, models });
const config = {
  profile: "hash" as const,
  size,
  queries: 0,
  imageShare: 0.05,
  embedSample: size,
  exactQueries: 0,
  workDir: path,
  keepStore: false,
};
const cpu = process.cpuUsage();
const ingested = await ingest(memory, config, batch);
const ingestCpu = process.cpuUsage(cpu);
const embedder = await measureEmbedder(models, config);
const rate = size / ingested.seconds;
console.log(
  JSON.stringify({
    size,
    sessionsPerCall: batch,
    rawNodesPerSecond: rate,
    ingestSeconds: ingested.seconds,
    ingestCpuSeconds: (ingestCpu.user + ingestCpu.system) / 1e6,
    embedderTextsPerSecond: embedder.textsPerSecond,
    ratio: rate / embedder.textsPerSecond,
  }),
);
await memory.close();
await models.close();
rmSync(path, { recursive: true, force: true });
