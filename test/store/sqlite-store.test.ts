import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import { StoreError } from "../../src/core/errors.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { drawPng, tempDir } from "../support/fixtures.ts";
import { forget, getSession, getThumbnail, listEntries } from "./scoped-reads.ts";
import { sqliteTodo } from "./sqlite-todo.ts";
import { buildSessionWrite, runStoreConformance, spaces } from "./store-conformance.ts";

runStoreConformance("sqlite", async (t) => SqliteStore.open({ path: tempDir(t) }), { todo: sqliteTodo });

const scope = { tenant: "acme", user: "ana" };
const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest("hex");

/** Opens the database file directly, read-only, to look at what the seam does not show. */
function inspect<T>(dir: string, read: (db: BetterSqlite3.Database) => T): T {
  const db = new BetterSqlite3(join(dir, "cairn.db"), { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

describe("SqliteStore", () => {
  it("keeps everything across close and reopen", async (t) => {
    const dir = tempDir(t);
    const red = await drawPng({ color: "#c00" });
    const write = await buildSessionWrite({
      key: "s1",
      turns: [
        { speaker: "Ana", text: "the heron stood in the reeds", images: [{ data: red, caption: "a grey heron" }] },
        { speaker: "Bo", text: "herons are patient" },
      ],
    });
    const first = await SqliteStore.open({ path: dir });
    const committed = await first.forScope(scope).commitSession(write);
    const before = {
      session: await getSession(first.forScope(scope), committed.session.id),
      nodes: await first.forScope(scope).readRawNodes({ ids: committed.rawNodeIds }),
      entries: await listEntries(first.forScope(scope)),
      audit: await first.forScope(scope).readAudit(),
    };
    await first.close();

    const reopened = await SqliteStore.open({ path: dir });
    t.after(() => reopened.close());
    const again = reopened.forScope(scope);
    assert.deepEqual(await getSession(again, committed.session.id), before.session);
    assert.deepEqual(await again.readRawNodes({ ids: committed.rawNodeIds }), before.nodes);
    assert.deepEqual(await listEntries(again), before.entries);
    assert.deepEqual(await again.readAudit(), before.audit);
    assert.deepEqual(Buffer.from((await again.readBlob(sha256(red))).data), red);
    assert.ok((await getThumbnail(again, sha256(red))).length > 0);
    assert.deepEqual(
      (await again.searchLexical("text", "reeds", { limit: 10 })).map((hit) => hit.id),
      [committed.rawNodeIds[0]],
    );
    const vector = write.rawNodes[1]?.textVectors["text:conformance-hash-64"];
    assert.ok(vector);
    const nearest = await again.searchVectors("text:conformance-hash-64", vector, { limit: 1 });
    assert.deepEqual(
      nearest.map((hit) => hit.id),
      [committed.rawNodeIds[1]],
    );
    assert.equal((await again.commitSession(write)).duplicate, true, "the reopened store knows the session");
  });

  it("records applied schema versions once and does not re-run them on reopen", async (t) => {
    const dir = tempDir(t);
    await (await SqliteStore.open({ path: dir, now: () => 1_000 })).close();
    await (await SqliteStore.open({ path: dir, now: () => 2_000 })).close();
    const rows = inspect(
      dir,
      (db) =>
        db.prepare("SELECT version, name, applied_ms FROM schema_migrations ORDER BY version").all() as {
          version: number;
          name: string;
          applied_ms: number;
        }[],
    );
    assert.ok(rows.length >= 1);
    assert.deepEqual(
      rows.map((row) => row.version),
      rows.map((_, index) => index + 1),
      "versions 1..N, each once",
    );
    assert.ok(
      rows.every((row) => row.name.length > 0 && row.applied_ms === 1_000),
      "applied on first open only",
    );
  });

  it("refuses with a StoreError to open a store whose schema is newer than the code, and leaves it alone", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    await store.forScope(scope).commitSession(await buildSessionWrite({ key: "s", turns: [{ text: "kept" }] }));
    await store.close();
    const writable = new BetterSqlite3(join(dir, "cairn.db"));
    writable
      .prepare("INSERT INTO schema_migrations (version, name, applied_ms) VALUES (999, 'from the future', 0)")
      .run();
    writable.close();

    await assert.rejects(SqliteStore.open({ path: dir }), (error) => {
      assert.ok(error instanceof StoreError, `expected StoreError, got ${error}`);
      assert.equal(error.operation, "open");
      assert.match(error.message, /999/);
      return true;
    });
    const state = inspect(dir, (db) => ({
      versions: (db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map(
        (row) => row.version,
      ),
      sessions: (db.prepare("SELECT count(*) AS n FROM sessions").get() as { n: number }).n,
    }));
    assert.ok(state.versions.includes(999));
    assert.equal(state.sessions, 1, "the newer store's data is untouched");
  });

  it("removes blob files a crashed write left behind, and keeps those its transaction committed", async (t) => {
    const dir = tempDir(t);
    const kept = await drawPng({ color: "#0a0" });
    const store = await SqliteStore.open({ path: dir });
    await store
      .forScope(scope)
      .commitSession(await buildSessionWrite({ key: "s", turns: [{ text: "kept", images: [{ data: kept }] }] }));
    await store.close();

    // What a writer killed after writing its files but before committing leaves: a journal naming an
    // orphan hash (files, no row), and a journal naming a hash whose row did commit.
    const orphan = await drawPng({ color: "#00a" });
    const orphanHash = sha256(orphan);
    mkdirSync(join(dir, "blobs", orphanHash.slice(0, 2)), { recursive: true });
    mkdirSync(join(dir, "thumbs", orphanHash.slice(0, 2)), { recursive: true });
    writeFileSync(join(dir, "blobs", orphanHash.slice(0, 2), orphanHash), orphan);
    writeFileSync(join(dir, "thumbs", orphanHash.slice(0, 2), `${orphanHash}.webp`), "thumb");
    writeFileSync(join(dir, "pending", "crashed-writer-1"), orphanHash);
    writeFileSync(join(dir, "pending", "crashed-writer-2"), `${sha256(kept)}\n${orphanHash}\n`);

    const reopened = await SqliteStore.open({ path: dir });
    t.after(() => reopened.close());
    assert.deepEqual(filesUnder(join(dir, "pending")), [], "journals are settled");
    assert.deepEqual(filesUnder(join(dir, "blobs")), [join(sha256(kept).slice(0, 2), sha256(kept))]);
    assert.deepEqual(filesUnder(join(dir, "thumbs")), [join(sha256(kept).slice(0, 2), `${sha256(kept)}.webp`)]);
    assert.deepEqual(Buffer.from((await reopened.forScope(scope).readBlob(sha256(kept))).data), kept);
  });

  it("removes a half-written temporary blob file left by a writer killed mid-write", async (t) => {
    const dir = tempDir(t);
    await (await SqliteStore.open({ path: dir })).close();
    const hash = sha256("never committed");
    mkdirSync(join(dir, "blobs", hash.slice(0, 2)), { recursive: true });
    writeFileSync(join(dir, "blobs", hash.slice(0, 2), `${hash}.0b1c2d3e-0000-4000-8000-000000000000.tmp`), "half");
    writeFileSync(join(dir, "pending", "crashed-writer"), hash);
    const reopened = await SqliteStore.open({ path: dir });
    t.after(() => reopened.close());
    assert.deepEqual(filesUnder(join(dir, "blobs")), [], "no file of an uncommitted write survives recovery");
  });

  it("forget all leaves no derived rows or files behind in any table", async (t) => {
    const dir = tempDir(t);
    const red = await drawPng({ color: "#c00" });
    const blue = await drawPng({ color: "#00c", shape: "square" });
    const store = await SqliteStore.open({ path: dir });
    t.after(() => store.close());
    const other = { tenant: "acme", user: "bo" };
    for (const target of [scope, other]) {
      await store.forScope(target).commitSession(
        await buildSessionWrite({
          key: "s",
          turns: [
            { text: "one", images: [{ data: red, caption: "red" }] },
            { text: "two", images: [{ data: blue }, { data: red }] },
          ],
        }),
      );
    }
    await forget(store.forScope(scope), { all: true }, spaces);
    await forget(store.forScope(other), { all: true }, spaces);
    const tables = [
      "sessions",
      "raw_nodes",
      "raw_node_images",
      "blobs",
      "blob_vectors",
      "index_entries",
      "index_pointers",
      "fts_text",
      "fts_image_text",
      ...store.spaces().map((space) => space.table_name),
    ];
    const counts = Object.fromEntries(
      tables.map((table) => [table, (store.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n]),
    );
    assert.deepEqual(counts, Object.fromEntries(tables.map((table) => [table, 0])));
    assert.deepEqual(filesUnder(join(dir, "blobs")), []);
    assert.deepEqual(filesUnder(join(dir, "thumbs")), []);
  });
});
