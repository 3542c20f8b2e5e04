/**
 * Where a Postgres `addSession` and `search` spend their statements: every query the `pg` client
 * sends (BEGIN and COMMIT included) is counted and timed from send to reply, grouped by its first
 * words, over the last 20% of the sessions of a perf-corpus ingest (so the scope already holds
 * the rest) and then over `--queries` searches. Counts are what this measures reliably on a shared
 * machine; the times are wall-clock under whatever load there is.
 *
 *   npx tsx bench/postgres-round-trips.ts --size 2000 --queries 50
 *
 * Needs PostgreSQL 15 + pgvector installed (a throwaway cluster is started) or CAIRN_BENCH_POSTGRES_URL.
 */
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import { parseArgs } from "node:util";
import pg from "pg";
import { openBenchPostgres } from "../src/bench/postgres/bench-postgres.ts";
import { Memory } from "../src/memory.ts";
import { openPostgresStore } from "../src/store/open-store.ts";
import { generateQueries, generateSessions, makeImagePool } from "./perf/corpus.ts";
import { loadModels, scope } from "./perf/run-config.ts";

const { values } = parseArgs({
  options: { size: { type: "string", default: "2000" }, queries: { type: "string", default: "50" } },
});
const size = Number(values.size);
const queryCount = Number(values.queries);

const statements = new Map<string, { count: number; ms: number }>();
let sent = 0;
type Query = (this: pg.Client, ...args: unknown[]) => unknown;
const original = pg.Client.prototype.query as unknown as Query;
(pg.Client.prototype as unknown as { query: Query }).query = function (this: pg.Client, ...args: unknown[]) {
  const first = args[0];
  const text = typeof first === "string" ? first : ((first as { text?: string } | undefined)?.text ?? "?");
  const label = text.replace(/\s+/g, " ").trim().slice(0, 72);
  const started = performance.now();
  sent++;
  const result = original.apply(this, args);
  if (result instanceof Promise) {
    result.then(
      () => {
        const seen = statements.get(label) ?? { count: 0, ms: 0 };
        seen.count++;
        seen.ms += performance.now() - started;
        statements.set(label, seen);
      },
      () => undefined,
    );
  }
  return result;
};

/**
 * CPU milliseconds so far of this process and, per process, of the Postgres server (every child of
 * its postmaster: backends, WAL writer, autovacuum). Compared per process id, so a backend that
 * exits in between (an idle pooled connection closed) takes nothing off the sum.
 */
const ticksPerMs = 100 / 1000;
let postmaster: number | null = null;
function cpuMs(): { client: number; server: Map<number, number> } {
  const usage = process.cpuUsage();
  const server = new Map<number, number>();
  if (postmaster !== null) {
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (Number(fields[1]) !== postmaster && Number(name) !== postmaster) continue;
        server.set(Number(name), (Number(fields[11]) + Number(fields[12])) / ticksPerMs);
      } catch {
        // The process ended meanwhile.
      }
    }
  }
  return { client: (usage.user + usage.system) / 1000, server };
}
let cpuStart = cpuMs();

function serverDelta(from: Map<number, number>, to: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of to) total += ms - (from.get(pid) ?? 0);
  return total;
}

function report(title: string, units: number, elapsedMs: number): void {
  const cpu = cpuMs();
  const cpuNote =
    postmaster === null
      ? ""
      : `; CPU per ${title.split(" ")[0]}: client ${((cpu.client - cpuStart.client) / units).toFixed(1)} ms, server ${(serverDelta(cpuStart.server, cpu.server) / units).toFixed(1)} ms`;
  console.log(
    `\n${title}: ${units} × ${(elapsedMs / units).toFixed(1)} ms, ${(sent / units).toFixed(1)} statements each${cpuNote}`,
  );
  const rows = [...statements].sort((left, right) => right[1].ms - left[1].ms);
  for (const [label, seen] of rows) {
    console.log(
      `${(seen.count / units).toFixed(2).padStart(7)} ${(seen.ms / units).toFixed(2).padStart(9)} ms  ${label}`,
    );
  }
  statements.clear();
  sent = 0;
  cpuStart = cpuMs();
}

const models = await loadModels("hash");
const postgres = await openBenchPostgres();
try {
  const url = await postgres.freshDatabase();
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  const [backend] = (await probe.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows;
  // The server's CPU can be read only when it runs on this machine (a throwaway cluster or a local server).
  try {
    const status = readFileSync(`/proc/${backend?.pid}/status`, "utf8");
    postmaster = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]);
  } catch {
    postmaster = null;
  }
  await probe.end();
  const store = await openPostgresStore({ url });
  const memory = await Memory.open({ store, models });
  try {
    const sessions = [...generateSessions({ rawNodes: size, imageShare: 0.05 }, await makeImagePool(48))];
    const measured = sessions.slice(Math.floor(sessions.length * 0.8));
    for (const session of sessions.slice(0, sessions.length - measured.length)) await memory.addSession(scope, session);
    await new Promise((resolve) => setTimeout(resolve, 100));
    statements.clear();
    sent = 0;
    cpuStart = cpuMs();
    let started = performance.now();
    for (const session of measured) await memory.addSession(scope, session);
    await new Promise((resolve) => setTimeout(resolve, 100));
    report(`addSession (${size} raw nodes, hash profile)`, measured.length, performance.now() - started - 100);
    const queries = generateQueries(queryCount);
    for (const mode of ["cairn", "tri-path"] as const) {
      for (const query of queries.slice(0, 5)) await memory.search(scope, query, { mode });
      await new Promise((resolve) => setTimeout(resolve, 100));
      statements.clear();
      sent = 0;
      cpuStart = cpuMs();
      started = performance.now();
      for (const query of queries) await memory.search(scope, query, { mode });
      await new Promise((resolve) => setTimeout(resolve, 100));
      report(`search (${mode})`, queries.length, performance.now() - started - 100);
    }
    console.log(
      `\nload average ${os
        .loadavg()
        .map((load) => load.toFixed(1))
        .join(" ")}`,
    );
  } finally {
    await memory.close();
  }
} finally {
  await postgres.close();
}
