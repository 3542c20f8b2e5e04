/**
 * What carrying tf, length and tenant in `lexical_postings`' primary key (Postgres migration 8)
 * costs an ingest: two fresh databases, one with the key as before migration 8, the other as after,
 * the same sessions written to both interleaved (the order alternating per session), so a loaded
 * machine slows both alike:
 *
 *   npx tsx bench/postgres-postings-ingest.ts --size 2000
 *
 * Prints and writes `<out>/postgres-postings-ingest.json`: total seconds and per-session p50/p95 on each.
 */
import { writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { openBenchPostgres } from "../src/bench/postgres/bench-postgres.ts";
import { Memory } from "../src/memory.ts";
import { openPostgresStore } from "../src/store/open-store.ts";
import { generateSessions, makeImagePool } from "./perf/corpus.ts";
import { loadModels, scope } from "./perf/run-config.ts";
import { latency } from "./perf/stats.ts";

const { values } = parseArgs({
  options: { size: { type: "string", default: "2000" }, out: { type: "string", default: "bench/results" } },
});
const size = Number(values.size);
const loadBefore = os.loadavg()[0] ?? 0;
const models = await loadModels("hash");
const postgres = await openBenchPostgres();
const sides = ["before", "after"] as const;
const samples: Record<(typeof sides)[number], number[]> = { before: [], after: [] };
try {
  const memories: Memory[] = [];
  for (const side of sides) {
    const url = await postgres.freshDatabase();
    const store = await openPostgresStore({ url });
    if (side === "before") {
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query(
        "ALTER TABLE lexical_postings DROP CONSTRAINT lexical_postings_pkey, ADD CONSTRAINT lexical_postings_pkey PRIMARY KEY (scope_key, field, lexeme, raw_node_rowid)",
      );
      await admin.end();
    }
    memories.push(await Memory.open({ store, models }));
  }
  try {
    const images = await makeImagePool(48);
    let index = 0;
    for (const session of generateSessions({ rawNodes: size, imageShare: 0.05 }, images)) {
      const order = index % 2 === 0 ? [0, 1] : [1, 0];
      for (const which of order) {
        const started = performance.now();
        await memories[which]?.addSession(scope, session);
        samples[sides[which] as (typeof sides)[number]].push(performance.now() - started);
      }
      index++;
    }
  } finally {
    for (const memory of memories) await memory.close();
  }
} finally {
  await models.close();
  await postgres.close();
}
const summary = Object.fromEntries(
  sides.map((side) => [
    side,
    { seconds: samples[side].reduce((a, b) => a + b, 0) / 1000, session: latency(samples[side]) },
  ]),
);
console.log(JSON.stringify(summary, null, 2));
writeFileSync(
  join(resolve(values.out), "postgres-postings-ingest.json"),
  `${JSON.stringify(
    {
      command: `npx tsx bench/postgres-postings-ingest.ts ${process.argv.slice(2).join(" ")}`.trim(),
      date: new Date().toISOString(),
      machine: `${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores; load average ${loadBefore.toFixed(1)} at the start, ${(os.loadavg()[0] ?? 0).toFixed(1)} at the end`,
      rawNodes: size,
      summary,
    },
    null,
    2,
  )}\n`,
);
