import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { it } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import * as sqliteVec from "sqlite-vec";
import { Memory } from "../../src/memory.ts";
import { openSqliteStore } from "../../src/store/open-store.ts";
import { imageSlots } from "../../src/store/sqlite/vector-rows.ts";
import { tempDir } from "../support/fixtures.ts";
import { type Needle, prepareResidueScenario } from "../support/forget-residue-fixture.ts";

/**
 * Forget erases (issue 18, part 2): once `forget` returns, nothing of what was forgotten (text,
 * OCR and caption text, metadata, session keys, vectors, image hashes and bytes) is anywhere in the
 * store's files: `cairn.db`, its WAL and shared memory, the ANN index files and the blob files,
 * with the writer still open and again after close. Markers are random, so a hit is never chance.
 * The scenario is shared with the Postgres store's test (`forget-residue-postgres.test.ts`).
 */

function filesUnder(root: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(root)) {
    const path = join(root, name);
    if (statSync(path).isDirectory()) out.push(...filesUnder(path));
    else out.push(path);
  }
  return out;
}

/** Every needle found in any file's bytes or name, as "what in file". */
function scan(root: string, needles: readonly Needle[]): string[] {
  const found: string[] = [];
  for (const path of filesUnder(root)) {
    const data = readFileSync(path);
    const name = relative(root, path);
    for (const needle of needles) {
      if (data.includes(needle.bytes) || name.includes(needle.bytes.toString("utf8"))) {
        found.push(`${needle.what} in ${name}`);
      }
    }
  }
  return found;
}

/** The stored vectors of some raw nodes, read behind Cairn's back: their bytes must go with them. */
function storedVectors(databasePath: string, rawNodeIds: readonly string[]): Needle[] {
  const db = new BetterSqlite3(databasePath, { readonly: true });
  try {
    sqliteVec.load(db);
    const needles: Needle[] = [];
    const spaces = db.prepare("SELECT kind, table_name FROM vector_spaces").all() as {
      kind: string;
      table_name: string;
    }[];
    for (const id of rawNodeIds) {
      const rowid = db.prepare("SELECT rowid FROM raw_nodes WHERE id = ?").pluck().get(id) as number;
      for (const space of spaces) {
        const [low, high] =
          space.kind === "text" ? [rowid, rowid] : [rowid * imageSlots, rowid * imageSlots + imageSlots - 1];
        const rows = db
          .prepare(`SELECT rowid, embedding FROM ${space.table_name} WHERE rowid BETWEEN ? AND ?`)
          .all(low, high) as { rowid: number; embedding: Buffer }[];
        for (const row of rows) {
          needles.push({ what: `vector ${space.table_name}:${row.rowid}`, bytes: row.embedding.subarray(0, 64) });
        }
      }
    }
    return needles;
  } finally {
    db.close();
  }
}

it("forgetting a session, a raw node and a whole user leaves none of their content in the store's files", async (t) => {
  const dir = tempDir(t);
  const storeDir = join(dir, "store");
  const scenario = await prepareResidueScenario(dir);
  const { keep, gone } = scenario;
  // A low ANN threshold, so the scopes' HNSW indexes exist on disk before the forget.
  const open = async () =>
    Memory.open({
      store: await openSqliteStore({ path: storeDir, vectorIndex: { minVectors: 2 } }),
      models: scenario.models,
    });

  let memory = await open();
  const populated = await scenario.populate(memory);
  await memory.close();
  // Reopened, so the ANN files written at close are on disk when the forget runs.
  memory = await open();
  t.after(() => memory.close());
  const vectors = storedVectors(join(storeDir, "cairn.db"), await scenario.forgottenNodes(memory, populated));
  assert.ok(vectors.length >= 5, `vectors read: ${vectors.length}`);

  const needles: Needle[] = [...scenario.needles(), ...vectors];
  assert.ok(filesUnder(join(storeDir, "ann")).length > 0, "the ANN indexes are on disk before the forget");
  const before = scan(storeDir, needles);
  assert.ok(before.length > needles.length / 2, `the scan sees the markers before forgetting: ${before.length}`);

  await scenario.forget(memory, populated.forgottenNode);

  assert.deepEqual(scan(storeDir, needles), [], "nothing forgotten is left while the writer is open");
  const pack = await memory.search(keep, scenario.survivorWord);
  assert.ok(pack.items.length >= 2, "the surviving raw nodes are still found");
  const check = await memory.checkIndex(keep);
  assert.deepEqual(check.violations, []);
  assert.equal(check.rawNodes, 3);
  assert.equal((await memory.listSessions(gone)).length, 0);
  const audit = await memory.listAudit(gone);
  assert.equal(audit.length, 1, "a forgotten scope keeps one forget event");
  assert.equal(audit[0]?.action, "forget");

  await memory.close();
  assert.deepEqual(scan(storeDir, needles), [], "nothing forgotten is left after close");
});
