import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import * as sqliteVec from "sqlite-vec";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { tempDir } from "../support/fixtures.ts";
import { buildSessionWrite, spaces, textSpace } from "./conformance-support.ts";
import { forget } from "./scoped-reads.ts";

const scope = { tenant: "acme", user: "ana" };
/** The migration that adds the plain vector copies (issue 20: to be renumbered 11 at merge). */
const plainVectorsMigration = 9;

function withDatabase<T>(dir: string, run: (db: BetterSqlite3.Database) => T): T {
  const db = new BetterSqlite3(join(dir, "cairn.db"));
  sqliteVec.load(db);
  try {
    return run(db);
  } finally {
    db.close();
  }
}

const plainCount = (db: BetterSqlite3.Database, table: string) =>
  db.prepare(`SELECT count(*) FROM plain_${table}`).pluck().get() as number;

describe("the plain copy of each vector space (exact scoring of search candidates)", () => {
  it("holds every committed vector, loses forgotten ones, and is rebuilt from vec0 for a store that predates it", async (t) => {
    const dir = tempDir(t);
    const texts = ["the heron stood in the reeds", "herons are patient", "the kayak is blue", "rain over Porto"];
    let store = await SqliteStore.open({ path: dir });
    const first = await store
      .forScope(scope)
      .commitSession(
        await buildSessionWrite({ key: "s1", turns: texts.slice(0, 2).map((text) => ({ speaker: "Ana", text })) }),
      );
    const second = await store
      .forScope(scope)
      .commitSession(
        await buildSessionWrite({ key: "s2", turns: texts.slice(2).map((text) => ({ speaker: "Bo", text })) }),
      );
    const ids = [...first.rawNodeIds, ...second.rawNodeIds];
    const before = await store.forScope(scope).readVectors(textSpace.name, ids);
    assert.equal(before.size, 4);
    const table = store.space(textSpace.name)?.table_name ?? assert.fail("no text space");
    await store.close();

    // A store from before the copy existed: no plain table, migration not applied.
    withDatabase(dir, (db) => {
      assert.equal(plainCount(db, table), 4);
      const plain = db
        .prepare("SELECT name FROM sqlite_master WHERE name LIKE 'plain_vec_%'")
        .pluck()
        .all() as string[];
      assert.ok(plain.length >= 2, "one copy per vector space (text, image text, image)");
      for (const name of plain) db.exec(`DROP TABLE ${name}`);
      db.prepare("DELETE FROM schema_migrations WHERE version = ?").run(plainVectorsMigration);
    });
    store = await SqliteStore.open({ path: dir });
    const after = await store.forScope(scope).readVectors(textSpace.name, ids);
    assert.deepEqual(
      [...after].map(([id, vector]) => [id, [...vector]]),
      [...before].map(([id, vector]) => [id, [...vector]]),
      "the migration copied every vector from vec0",
    );

    await forget(store.forScope(scope), { session: "s1" }, spaces);
    assert.deepEqual([...(await store.forScope(scope).readVectors(textSpace.name, ids)).keys()], second.rawNodeIds);
    await store.close();
    withDatabase(dir, (db) => assert.equal(plainCount(db, table), 2, "the forgotten session's vectors are gone"));
  });
});
