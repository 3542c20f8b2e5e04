import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { closeSync, openSync, readFileSync, readSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import * as sqliteVec from "sqlite-vec";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { residueNeedles, scanForResidue } from "../../src/store/sqlite/residue-scan.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";

/**
 * Forget erases what SQLite's page rebuilds keep (decision 038). A b-tree page SQLite rebuilds keeps
 * old copies of its cells in its free gap, which `secure_delete` never zeroes; the crash loop found
 * a forgotten turn there. These tests put such a copy in a page by hand (what a rebuild leaves is
 * not something a test can make happen on demand) and check that the scan finds it, that forget then
 * vacuums it away without changing any rowid, and that a forget killed before its erasure is
 * settled leaves the next open to vacuum.
 */

const marker = (label: string) => `${label}${randomBytes(8).toString("hex")}7`;

function rootPages(path: string): number[] {
  const db = new BetterSqlite3(path, { readonly: true });
  try {
    return db.prepare("SELECT rootpage FROM sqlite_schema WHERE rootpage > 0").pluck().all() as number[];
  } finally {
    db.close();
  }
}

/**
 * Writes `text` into the free gap of a leaf page of `table` (between its cell pointers and its
 * cells), where a rebuilt page keeps the old copies of its cells. The database must be closed.
 */
function plantInGap(path: string, table: string, text: string): number {
  const db = new BetterSqlite3(path, { readonly: true });
  const pages = db
    .prepare("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno")
    .pluck()
    .all(table) as number[];
  const pageSize = db.pragma("page_size", { simple: true }) as number;
  db.close();
  const bytes = Buffer.from(text);
  const fd = openSync(path, "r+");
  try {
    const page = Buffer.alloc(pageSize);
    for (const pageNumber of pages) {
      readSync(fd, page, 0, pageSize, (pageNumber - 1) * pageSize);
      const at = pageNumber === 1 ? 100 : 0;
      const gapStart = at + 8 + 2 * page.readUInt16BE(at + 3);
      const contentStart = page.readUInt16BE(at + 5) || 65536;
      // Clear of the pointer array, as an old cell would be.
      const offset = contentStart - bytes.length - 2;
      if (offset < gapStart + 16) continue;
      writeSync(fd, bytes, 0, bytes.length, (pageNumber - 1) * pageSize + offset);
      return pageNumber;
    }
  } finally {
    closeSync(fd);
  }
  throw new Error(`no leaf page of ${table} has a gap for ${bytes.length} bytes`);
}

/** Every rowid of every table that has one, read by `_rowid_` (vec0's chunk tables name a column "rowid"). */
function allRowids(path: string): Map<string, string> {
  const db = new BetterSqlite3(path, { readonly: true });
  try {
    const tables = db
      .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")
      .all() as { name: string; sql: string }[];
    const out = new Map<string, string>();
    for (const { name, sql } of tables) {
      if (/WITHOUT ROWID/i.test(sql)) continue;
      const rowids = db.prepare(`SELECT _rowid_ FROM "${name}" ORDER BY 1`).pluck().all();
      out.set(name, rowids.join(","));
    }
    return out;
  } finally {
    db.close();
  }
}

/** A closed store of three one-turn sessions (s0, s1, s2) in one scope, with the models to open it. */
async function diaryStore(t: { after: (fn: () => void) => void }) {
  const storeDir = join(tempDir(t), "store");
  const scope = { tenant: "acme", user: "ana" };
  const models = createHashModels({ dimensions: 64 });
  const memory = await Memory.open({ path: storeDir, models });
  for (let index = 0; index < 3; index++) {
    await memory.addSession(scope, {
      session: `s${index}`,
      time: "2024-05-02T09:00:00Z",
      turns: [{ speaker: "Ana", text: `turn ${index} of the diary` }],
    });
  }
  await memory.close();
  return { storeDir, databasePath: join(storeDir, "cairn.db"), scope, models };
}

describe("the residue scan", () => {
  it("finds a forgotten value in a page's free gap and in a free page, never in a live row", (t) => {
    const path = join(tempDir(t), "scan.db");
    const db = new BetterSqlite3(path);
    db.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
    const live = marker("live");
    for (let index = 0; index < 40; index++) {
      db.prepare("INSERT INTO notes (body) VALUES (?)").run(index === 7 ? `keep ${live}` : `note ${index}`);
    }
    // Without secure_delete, a dropped table's pages go to the free list as they were.
    const dropped = marker("dropped");
    db.exec("CREATE TABLE scratch (body TEXT)");
    for (let index = 0; index < 200; index++) db.prepare("INSERT INTO scratch VALUES (?)").run(`${dropped} ${index}`);
    db.exec("DROP TABLE scratch");
    db.close();
    const gone = marker("gone");
    plantInGap(path, "notes", `an old cell: ${gone}`);

    const roots = rootPages(path);
    const inGap = scanForResidue(path, roots, residueNeedles([gone]));
    assert.equal(inGap.hits.length, 1, "the copy in the gap is found");
    assert.match(inGap.hits[0] ?? "", /unallocated/);
    assert.ok(inGap.pages >= 2);
    // A fragment as long as the window is enough.
    assert.equal(scanForResidue(path, roots, residueNeedles([`xx${gone.slice(4, 18)}yy`])).hits.length, 1);
    assert.deepEqual(scanForResidue(path, roots, residueNeedles([live])).hits, [], "a live row is not residue");
    assert.ok(
      scanForResidue(path, roots, residueNeedles([dropped])).hits.some((hit) => hit.includes("free")),
      "a free page that was not zeroed is read",
    );
  });
});

describe("forget on the SQLite store", () => {
  it("vacuums away a copy of the forgotten turn left in a rebuilt page, keeps every rowid, and scans clean otherwise", async (t) => {
    const dir = tempDir(t);
    const storeDir = join(dir, "store");
    const databasePath = join(storeDir, "cairn.db");
    const scope = { tenant: "acme", user: "ana" };
    const models = createHashModels({ dimensions: 64 });
    writeFile(dir, "kayak.png", await drawPng({ shape: "square", color: "#08c" }));
    const secret = marker("secret");
    const survivor = marker("alive");
    let memory = await Memory.open({ path: storeDir, models });
    await memory.addSession(
      scope,
      {
        session: "kept",
        time: "2024-05-01T09:00:00Z",
        turns: [
          { speaker: "Ana", text: `the kayak trip ${survivor} stays` },
          { speaker: "Bo", text: "a picture", images: [{ path: "kayak.png", caption: "blue kayak" }] },
        ],
      },
      { baseDir: dir },
    );
    // "later" follows the forgotten ones, so a VACUUM that numbered rows again would move its rowids.
    for (const session of ["plain", "secret", "later"]) {
      await memory.addSession(scope, {
        session,
        time: "2024-05-02T09:00:00Z",
        turns: [{ speaker: "Ana", text: session === "secret" ? `my pin is ${secret} ok` : "nothing to hide here" }],
      });
    }
    await memory.close();

    // A forget with nothing left behind scans the file and finds it clean.
    memory = await Memory.open({ path: storeDir, models });
    const plain = await memory.forget(scope, { session: "plain" });
    assert.equal(plain.erasure?.outcome, "clean");
    assert.ok((plain.erasure?.pagesScanned ?? 0) > 10, `pages scanned: ${plain.erasure?.pagesScanned}`);
    await memory.close();

    // Each table a row of the secret turn lives in has a page whose gap holds an old copy of it.
    plantInGap(databasePath, "raw_nodes", `old cell ${secret} ok`);
    const rowidsBefore = allRowids(databasePath);
    assert.ok(readFileSync(databasePath).includes(secret));

    memory = await Memory.open({ path: storeDir, models });
    t.after(() => memory.close());
    const forgotten = await memory.forget(scope, { session: "secret" });
    assert.equal(forgotten.erasure?.outcome, "vacuumed", "the copy in the gap is found and the store vacuums");
    assert.ok(!readFileSync(databasePath).includes(secret), "no copy of the forgotten turn is left in cairn.db");

    // VACUUM keeps rowids only where a table has an INTEGER PRIMARY KEY or an index: every row of
    // every table keeps its rowid (a VACUUM that numbered rows again would pack them from 1), and only
    // rows the forget wrote (its audit event) are new, past the old ones.
    const rowidsAfter = allRowids(databasePath);
    assert.deepEqual([...rowidsAfter.keys()].sort(), [...rowidsBefore.keys()].sort());
    const renumbered = [...rowidsAfter].filter(([name, rowids]) => {
      const before = (rowidsBefore.get(name) ?? "").split(",").filter(Boolean).map(Number);
      const last = Math.max(0, ...before);
      return rowids
        .split(",")
        .filter(Boolean)
        .some((rowid) => Number(rowid) <= last && !before.includes(Number(rowid)));
    });
    assert.deepEqual(renumbered, [], "no table's rows were numbered again");
    const pack = await memory.search(scope, { text: `kayak ${survivor}` });
    assert.ok(
      pack.items.some((item) => item.text?.includes(survivor)),
      "the survivor is still found",
    );
    assert.deepEqual((await memory.checkIndex(scope)).violations, []);
  });

  it("a forget killed before its erasure was settled leaves the next open to vacuum", async (t) => {
    const { storeDir, databasePath, scope, models } = await diaryStore(t);
    const secret = marker("secret");
    let memory: Memory;
    // As a forget killed between its commit and its scan leaves it: the mark, and an old copy.
    plantInGap(databasePath, "raw_nodes", `old cell ${secret} ok`);
    const db = new BetterSqlite3(databasePath);
    sqliteVec.load(db);
    db.prepare("INSERT INTO erasure_pending (id, since_ms) VALUES (1, 0)").run();
    db.close();

    memory = await Memory.open({ path: storeDir, models });
    t.after(() => memory.close());
    assert.ok(!readFileSync(databasePath).includes(secret), "the open vacuumed");
    const check = new BetterSqlite3(databasePath);
    t.after(() => check.close());
    const pending = () => check.prepare("SELECT count(*) FROM erasure_pending").pluck().get();
    assert.equal(pending(), 0, "the mark is cleared");
    assert.equal((await memory.listSessions(scope)).length, 3);

    // Another process's forget left its erasure pending (a reader held the WAL): the next forget
    // cannot know what that one forgot, so it vacuums rather than scan for its own values only.
    check.prepare("INSERT INTO erasure_pending (id, since_ms) VALUES (1, 0)").run();
    const next = await memory.forget(scope, { session: "s1" });
    assert.equal(next.erasure?.outcome, "vacuumed");
    assert.equal(pending(), 0);
  });

  it("a store that forgot before migration 13 is vacuumed once on its first open under it; one that never forgot is not marked", async (t) => {
    const { storeDir, databasePath, scope, models } = await diaryStore(t);
    const secret = marker("secret");
    let memory: Memory;
    // As an older Cairn left it: no migration 13, no mark, and (here) nothing forgotten yet.
    const downgrade = () => {
      const db = new BetterSqlite3(databasePath);
      sqliteVec.load(db);
      db.exec("DELETE FROM schema_migrations WHERE version = 13; DROP TABLE erasure_pending");
      db.close();
    };
    downgrade();
    plantInGap(databasePath, "raw_nodes", `old cell ${secret} ok`);
    memory = await Memory.open({ path: storeDir, models });
    await memory.close();
    assert.ok(readFileSync(databasePath).includes(secret), "a store that never forgot is not vacuumed");

    memory = await Memory.open({ path: storeDir, models });
    await memory.forget(scope, { session: "s0" });
    await memory.close();
    downgrade();
    plantInGap(databasePath, "raw_nodes", `old cell ${secret} ok`);
    memory = await Memory.open({ path: storeDir, models });
    t.after(() => memory.close());
    assert.ok(!readFileSync(databasePath).includes(secret), "a store with a forget event is vacuumed on upgrade");
    assert.equal((await memory.listSessions(scope)).length, 2);
  });
});
