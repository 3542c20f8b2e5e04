/**
 * What a forget's erasure costs on the SQLite store (decision 038): a store of the perf corpus
 * (hash models, 5% images, `--sizes` raw nodes in one scope, `addSessions` 50 a call), then
 * `--forgets` sessions forgotten one by one, spread over the store. Reports, per size, the median and
 * p95 forget time, the median erasure step (checkpoint, scan, vacuum when one ran), the pages
 * scanned, how many forgets ended clean or vacuumed, and one plain `VACUUM` of the same store,
 * which is what every forget would cost if it vacuumed unconditionally.
 *
 *   npx tsx bench/forget-erasure.ts                      # 10,000 and 100,000 raw nodes, 40 forgets
 *   npx tsx bench/forget-erasure.ts --sizes 10000 --forgets 20
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import BetterSqlite3 from "better-sqlite3";
import * as sqliteVec from "sqlite-vec";
import { Memory } from "../src/memory.ts";
import { createHashModels } from "../src/models/hash-provider.ts";
import { ingestCorpus, progress, scope } from "./perf/run-config.ts";
import { percentile } from "./perf/stats.ts";

const { values } = parseArgs({
  options: { sizes: { type: "string", default: "10000,100000" }, forgets: { type: "string", default: "40" } },
});
const sizes = values.sizes.split(",").map(Number);
const forgets = Number(values.forgets);

for (const size of sizes) {
  const dir = mkdtempSync(join(tmpdir(), "cairn-forget-erasure-"));
  try {
    const models = createHashModels({ dimensions: 384 });
    let memory = await Memory.open({ path: dir, models });
    await ingestCorpus(memory, size, 50);
    const sessions = await memory.listSessions(scope, { limit: 1_000_000 });
    await memory.close();
    const megabytes = statSync(join(dir, "cairn.db")).size / 2 ** 20;

    memory = await Memory.open({ path: dir, models });
    const step = Math.max(1, Math.floor(sessions.length / forgets));
    const forgetMs: number[] = [];
    const erasureMs: number[] = [];
    const outcomes: Record<string, number> = {};
    let pages = 0;
    const bar = progress(`forget at ${size}`, forgets);
    for (let index = 0; index < forgets && index * step < sessions.length; index++) {
      const session = sessions[index * step];
      if (!session) break;
      const started = performance.now();
      const result = await memory.forget(scope, { session: session.key });
      forgetMs.push(performance.now() - started);
      erasureMs.push(result.erasure?.ms ?? 0);
      pages = result.erasure?.pagesScanned ?? pages;
      const outcome = result.erasure?.outcome ?? "none";
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      bar.increment();
    }
    bar.stop();
    await memory.close();

    const db = new BetterSqlite3(join(dir, "cairn.db"));
    sqliteVec.load(db);
    const started = performance.now();
    db.exec("VACUUM");
    db.pragma("wal_checkpoint(TRUNCATE)");
    const vacuumMs = performance.now() - started;
    db.close();

    console.log(
      [
        `${size.toLocaleString("en")} raw nodes (${sessions.length.toLocaleString("en")} sessions, ${megabytes.toFixed(0)} MiB):`,
        `forget median ${percentile(forgetMs, 50).toFixed(0)} ms, p95 ${percentile(forgetMs, 95).toFixed(0)} ms;`,
        `erasure step median ${percentile(erasureMs, 50).toFixed(0)} ms over ${pages.toLocaleString("en")} pages;`,
        `outcomes ${JSON.stringify(outcomes)};`,
        `one VACUUM ${vacuumMs.toFixed(0)} ms`,
      ].join(" "),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
