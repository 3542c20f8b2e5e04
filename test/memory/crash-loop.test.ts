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

/** Markers of forgotten turns found in any file of the store; in the database, the tables holding them. */
function residue(storeDir: string, markers: readonly string[]): string[] {
  const needles = markers.flatMap((marker) => [marker, marker.slice(-12)]).map((text) => Buffer.from(text));
  const found: string[] = [];
  for (const path of filesUnder(storeDir)) {
    const data = readFileSync(path);
    for (const needle of needles) if (data.includes(needle)) found.push(`${needle} in ${path.slice(storeDir.length)}`);
  }
  if (found.some((place) => place.endsWith("/cairn.db"))) found.push(...tablesHolding(storeDir, needles));
  return found;
}

/**
 * Where in the database a marker still is: a live row of some table, or (when no row holds it) only
 * freed space that was not overwritten. Asked only when the file check already failed.
 */
function tablesHolding(storeDir: string, needles: readonly Buffer[]): string[] {
  const db = new BetterSqlite3(join(storeDir, "cairn.db"), { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
    const holding: string[] = [];
    for (const table of tables) {
      let rows: unknown[];
      try {
        rows = db.prepare(`SELECT * FROM "${table}"`).raw().all();
      } catch {
        continue; // a virtual table whose module this connection has not loaded
      }
      const hit = rows.some((row) =>
        (row as unknown[]).some((value) => {
          const bytes = typeof value === "string" ? Buffer.from(value) : Buffer.isBuffer(value) ? value : null;
          return bytes !== null && needles.some((needle) => bytes.includes(needle));
        }),
      );
      if (hit) holding.push(`a live row of ${table}`);
    }
    return holding.length > 0 ? holding : ["no live row: freed space not overwritten"];
  } finally {
    db.close();
  }
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
  const whileOpen = residue(storeDir, goneMarkers);
  await memory.close();
  closed = true;
  const afterClose = residue(storeDir, goneMarkers);

  const db = new BetterSqlite3(join(storeDir, "cairn.db"));
  t.after(() => db.close());
  assert.deepEqual(db.pragma("integrity_check"), [{ integrity_check: "ok" }], `SQLite integrity ${context}`);
  assert.ok(checkFtsIntegrity(db).length > 0, `FTS5 integrity ${context}`);

  // Stop 11 saw a forgotten marker here once; 60 runs (about 3,400 kills) since the fixes that
  // followed found none, so this gates again. When it fails, the message names where the marker is:
  // a live row of some table, or freed space that was not overwritten.
  assert.deepEqual(whileOpen, [], `forgotten markers with the recovered store open ${context}`);
  assert.deepEqual(afterClose, [], `forgotten markers after close ${context}`);
});
