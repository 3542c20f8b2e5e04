/**
 * Where a Postgres `addSession` spends its server time: a fresh database on a throwaway cluster
 * with `auto_explain` loaded, `preload` generated raw nodes ingested through `Memory.addSession`
 * unobserved, then `sessions` more with every statement's plan logged with its actual times and
 * trigger times (foreign-key checks, `log_triggers`). Prints, per statement shape, the count and
 * total time, and per plan node of the commit's statements the total actual time; and the
 * client-side seconds per session of both phases.
 *
 *   npx tsx bench/perf/postgres-ingest-profile.ts --preload 20000 --sessions 40
 */
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { AppDatabases } from "../../src/bench/postgres/app-databases.ts";
import { startThrowawayCluster } from "../../src/bench/postgres/throwaway-cluster.ts";
import { Memory } from "../../src/memory.ts";
import { openPostgresStore } from "../../src/store/open-store.ts";
import { generateSessions, makeImagePool } from "./corpus.ts";
import { loadModels, scope } from "./run-config.ts";

const { values } = parseArgs({
  options: { preload: { type: "string", default: "20000" }, sessions: { type: "string", default: "40" } },
});
const preload = Number(values.preload);
const observed = Number(values.sessions);
const load = () => (os.loadavg()[0] ?? 0).toFixed(2);
console.log(`load average at start ${load()}`);
const server = await startThrowawayCluster({
  settings: {
    shared_buffers: "512MB",
    shared_preload_libraries: "auto_explain",
    "auto_explain.log_min_duration": "-1",
  },
});
const models = await loadModels("hash");
try {
  const databases = await AppDatabases.prepare(server, {
    role: "cairn_profile",
    password: "cairn-profile",
    template: "cairn_profile_template",
    prefix: "cairn_profile",
  });
  const url = await databases.fresh();
  const database = new URL(url).pathname.slice(1);
  const images = await makeImagePool(48);
  const sessions = generateSessions({ rawNodes: preload + observed * 25, imageShare: 0.05 }, images);
  const timed = async (memory: Memory, until: (nodes: number, count: number) => boolean) => {
    let nodes = 0;
    let count = 0;
    const started = performance.now();
    // Not for…of: a break there would close the generator, and the second phase goes on from it.
    for (let next = sessions.next(); !next.done; next = sessions.next()) {
      const session = next.value;
      await memory.addSession(scope, session);
      nodes += session.turns.length;
      count++;
      if (until(nodes, count)) break;
    }
    const seconds = (performance.now() - started) / 1000;
    return { nodes, count, seconds, msPerSession: (seconds * 1000) / count, nodesPerSecond: nodes / seconds };
  };
  let memory = await Memory.open({ store: await openPostgresStore({ url }), models });
  // An experiment's schema change, made after the migrations and before any row (PROFILE_SETUP_SQL).
  if (process.env.PROFILE_SETUP_SQL) {
    const setup = databases.admin(database);
    await setup.connect();
    await setup.query(process.env.PROFILE_SETUP_SQL);
    await setup.end();
  }
  const first = await timed(memory, (nodes) => nodes >= preload);
  await memory.close();
  console.log("preload", JSON.stringify(first), `load ${load()}`);
  const admin = databases.admin(database);
  await admin.connect();
  for (const [name, value] of Object.entries({
    "auto_explain.log_min_duration": "0",
    "auto_explain.log_analyze": "on",
    "auto_explain.log_triggers": "on",
    "auto_explain.log_nested_statements": process.env.PROFILE_NESTED ?? "off",
    "auto_explain.log_buffers": "on",
    "auto_explain.log_format": "json",
  })) {
    await admin.query(`ALTER DATABASE ${database} SET ${name} = '${value}'`);
  }
  await admin.query("SELECT pg_rotate_logfile()").catch(() => undefined);
  await admin.end();
  const logPath = join(dirname(server.dataDirectory ?? ""), "log");
  const logStart = readFileSync(logPath).length;
  memory = await Memory.open({ store: await openPostgresStore({ url }), models });
  const second = await timed(memory, (_nodes, count) => count >= observed);
  await memory.close();
  console.log("observed (auto_explain on)", JSON.stringify(second), `load ${load()}`);
  const text = readFileSync(logPath).subarray(logStart).toString();
  if (process.env.PROFILE_LOG) writeFileSync(process.env.PROFILE_LOG, text);
  summarise(text);
} finally {
  await models.close();
  server.stop();
}

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "CTE Name"?: string;
  "Actual Total Time"?: number;
  "Actual Loops"?: number;
  Plans?: PlanNode[];
}

function summarise(log: string): void {
  const byStatement = new Map<string, { count: number; ms: number }>();
  const byNode = new Map<string, { count: number; ms: number }>();
  const byTrigger = new Map<string, { count: number; ms: number; calls: number }>();
  const add = <T extends { count: number; ms: number }>(
    map: Map<string, T>,
    key: string,
    ms: number,
    extra?: Partial<T>,
  ) => {
    const entry = map.get(key) ?? ({ count: 0, ms: 0 } as T);
    entry.count++;
    entry.ms += ms;
    for (const [name, value] of Object.entries(extra ?? {}))
      (entry as Record<string, number>)[name] = ((entry as Record<string, number>)[name] ?? 0) + (value as number);
    map.set(key, entry);
  };
  // Each entry: a "duration: N ms  plan:" line, then the JSON plan with every line indented by a tab.
  for (const match of log.matchAll(/duration: ([\d.]+) ms\s+plan:\n((?:\t.*\n)+)/g)) {
    const ms = Number(match[1]);
    let plan: {
      "Query Text": string;
      Plan: PlanNode;
      Triggers?: { "Trigger Name": string; Relation: string; Time: number; Calls: number }[];
    };
    try {
      plan = JSON.parse((match[2] ?? "").replace(/^\t/gm, ""));
    } catch {
      continue;
    }
    const text = plan["Query Text"].replace(/\s+/g, " ").trim();
    const shape = text.slice(0, 90);
    add(byStatement, shape, ms);
    for (const trigger of plan.Triggers ?? []) {
      add(byTrigger, `${shape.slice(0, 40)} | ${trigger["Trigger Name"]} on ${trigger.Relation}`, trigger.Time, {
        calls: trigger.Calls,
      });
    }
    if (ms < 1) continue;
    const walk = (node: PlanNode, path: string) => {
      const label = `${node["Node Type"]}${node["Relation Name"] ? ` ${node["Relation Name"]}` : ""}${node["CTE Name"] ? ` (${node["CTE Name"]})` : ""}`;
      const own = (node["Actual Total Time"] ?? 0) * (node["Actual Loops"] ?? 1);
      const children = (node.Plans ?? []).reduce(
        (sum, child) => sum + (child["Actual Total Time"] ?? 0) * (child["Actual Loops"] ?? 1),
        0,
      );
      add(byNode, `${shape.slice(0, 30)} | ${path}${label}`, own - children);
      for (const child of node.Plans ?? []) walk(child, `${path}  `);
    };
    walk(plan.Plan, "");
  }
  const print = (title: string, map: Map<string, { count: number; ms: number }>, limit = 40) => {
    console.log(`\n${title}`);
    for (const [key, entry] of [...map].sort((a, b) => b[1].ms - a[1].ms).slice(0, limit)) {
      console.log(`${entry.ms.toFixed(1).padStart(9)} ms ${String(entry.count).padStart(5)}x  ${key}`);
    }
  };
  print("statements (total ms, count)", byStatement);
  print("plan nodes, self time (statements over 1 ms)", byNode, 50);
  print("triggers (total ms)", byTrigger);
}
