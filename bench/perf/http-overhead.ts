/**
 * Where a search over HTTP spends the time that `Memory.search` in-process does not, on a store kept by
 * `npm run bench:perf -- --keep` (hash profile). The same queries, alternating query by query, through:
 *
 *   in-process   `Memory.search`, the pack kept as an object;
 *   + JSON       the same, then `JSON.stringify` of the pack (what `c.json` sends);
 *   app.request  the Hono app in this process (Host/Origin checks, API key, zod body, handler, JSON), no socket;
 *   socket       `fetch` to a `cairn serve` started in this process on loopback (the above plus node:http);
 *   child        `fetch` to a `cairn serve` child process (what `bench:load` measures): two processes, two event loops.
 *
 *   node --import tsx bench/perf/http-overhead.ts /tmp/perf/tmp/hash-10000 [queries] [--child]
 *
 * Wall and CPU milliseconds per search (CPU: this process's user + system; the child's own CPU is not seen).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { openKeyStore } from "../../src/auth/key-store.ts";
import { Memory } from "../../src/memory.ts";
import { createModels } from "../../src/models/profiles.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { createApp } from "../../src/surfaces/http/app.ts";
import { startServer } from "../../src/surfaces/http/server.ts";
import { generateQueries } from "./corpus.ts";
import { scope } from "./run-config.ts";
import { latency } from "./stats.ts";

const path = process.argv[2];
if (!path) throw new Error("usage: http-overhead.ts <kept store folder> [queries] [--child]");
const count = Number(process.argv[3] ?? 200);
const withChild = process.argv.includes("--child");
const root = resolve(fileURLToPath(import.meta.url), "../../..");

const models = await createModels("hash");
const store = await SqliteStore.open({ path });
const memory = await Memory.open({ store, models });
await store.vectorIndexes.ready(memory.spaces.text.name, scope);
const keys = await openKeyStore(path);
const { key } = await keys.create({ tenant: scope.tenant, user: scope.user });
const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
const app = createApp({ memory, keys });
const server = await startServer({ memory, keys, port: 0 });
const child = withChild ? await startChild() : null;

type Way = (query: string) => Promise<number>;
const ways: Record<string, Way> = {
  "in-process": async (query) => {
    await memory.search(scope, query);
    return 0;
  },
  "+ JSON": async (query) => JSON.stringify(await memory.search(scope, query)).length,
  "app.request": async (query) => {
    const response = await app.request("/v1/search", {
      method: "POST",
      headers,
      body: JSON.stringify({ text: query }),
    });
    return (await response.text()).length;
  },
  socket: async (query) => {
    const response = await fetch(`${server.url}/v1/search`, {
      method: "POST",
      headers,
      body: JSON.stringify({ text: query }),
    });
    return (await response.text()).length;
  },
};
if (child) {
  ways.child = async (query) => {
    const response = await fetch(`${child.url}/v1/search`, {
      method: "POST",
      headers,
      body: JSON.stringify({ text: query }),
    });
    return (await response.text()).length;
  };
}

const queries = generateQueries(count);
for (const query of queries.slice(0, 20)) for (const way of Object.values(ways)) await way(query);
const names = Object.keys(ways);
const wall = Object.fromEntries(names.map((name) => [name, [] as number[]]));
const cpu = Object.fromEntries(names.map((name) => [name, [] as number[]]));
const bytes = Object.fromEntries(names.map((name) => [name, [] as number[]]));
for (const query of queries) {
  for (const [name, way] of Object.entries(ways)) {
    const before = process.cpuUsage();
    const begin = performance.now();
    const size = await way(query);
    const ms = performance.now() - begin;
    const used = process.cpuUsage(before);
    wall[name]?.push(ms);
    cpu[name]?.push((used.user + used.system) / 1000);
    bytes[name]?.push(size);
  }
}
for (const name of names) {
  const w = latency(wall[name] ?? []);
  const c = latency(cpu[name] ?? []);
  const b = bytes[name] ?? [];
  console.log(
    `${name.padEnd(12)} wall p50 ${w.p50.toFixed(2)} p95 ${w.p95.toFixed(2)} | cpu p50 ${c.p50.toFixed(2)} p95 ${c.p95.toFixed(2)} | bytes ${Math.round(b.reduce((a, x) => a + x, 0) / b.length)}`,
  );
}
child?.process.kill("SIGTERM");
await server.close();

async function startChild(): Promise<{ url: string; process: ChildProcess }> {
  const spawned = spawn(
    process.execPath,
    [join(root, "bin/cairn.js"), "serve", "--db", path as string, "--port", "0", "--profile", "hash"],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let output = "";
  const url = await new Promise<string>((done, reject) => {
    spawned.stdout?.on("data", (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) done(match[1] as string);
    });
    spawned.once("exit", (code) => reject(new Error(`cairn serve exited with ${code}:\n${output}`)));
  });
  return { url, process: spawned };
}
