import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import { runCrashLoop } from "../support/crash-loop.ts";
import { tempDir } from "../support/fixtures.ts";
import { checkFtsIntegrity } from "../support/sqlite-fts.ts";

/**
 * The crash loop (issue 18, part 5) on the SQLite store: see `test/support/crash-loop.ts`, shared
 * with the Postgres store's run (`crash-loop-postgres.test.ts`). On SQLite, besides: no forgotten
 * turn's marker is left in any file of the store (with the recovered store open and after close),
 * and SQLite reports no corruption. CAIRN_CRASH_KILLS sets the number of kills (default 50, two
 * thirds of them during forget, by two forgetting children at once; `npm run test:reliability` runs
 * 500); CAIRN_CRASH_SEED replays a run.
 */

const kills = Number(process.env.CAIRN_CRASH_KILLS ?? 50);

function filesUnder(root: string): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

/** Markers of forgotten turns found in any file of the store. */
function residue(storeDir: string, markers: readonly string[]): string[] {
  const needles = markers.flatMap((marker) => [marker, marker.slice(-12)]).map((text) => Buffer.from(text));
  const found: string[] = [];
  for (const path of filesUnder(storeDir)) {
    const data = readFileSync(path);
    for (const needle of needles) if (data.includes(needle)) found.push(`${needle} in ${path.slice(storeDir.length)}`);
  }
  return found;
}

it(`${kills} SIGKILLs during ingest and forget lose no acknowledged session, revive no forgotten one and leave no forgotten marker`, async (t) => {
  const root = tempDir(t, "cairn-crash-loop-");
  const storeDir = join(root, "store");
  const inputDir = join(root, "input");
  mkdirSync(inputDir);
  const { memory, goneMarkers, context } = await runCrashLoop({
    location: storeDir,
    inputDir,
    kills,
    diagnostic: (message) => t.diagnostic(message),
  });
  let closed = false;
  t.after(async () => {
    if (!closed) await memory.close();
  });
  assert.deepEqual(residue(storeDir, goneMarkers), [], `forgotten markers with the recovered store open ${context}`);
  await memory.close();
  closed = true;
  assert.deepEqual(residue(storeDir, goneMarkers), [], `forgotten markers after close ${context}`);

  const db = new BetterSqlite3(join(storeDir, "cairn.db"));
  t.after(() => db.close());
  assert.deepEqual(db.pragma("integrity_check"), [{ integrity_check: "ok" }], `SQLite integrity ${context}`);
  assert.ok(checkFtsIntegrity(db).length > 0, `FTS5 integrity ${context}`);
});
