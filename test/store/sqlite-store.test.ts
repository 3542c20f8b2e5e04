import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import { StoreError } from "../../src/core/errors.ts";
import { rebuildLexicalIndex } from "../../src/store/sqlite/lexical-index.ts";
import { knownSchemaVersions, migrate } from "../../src/store/sqlite/migrations.ts";
import { knownImageUse } from "../../src/store/sqlite/read-blobs.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { tenantStorage } from "../../src/store/sqlite/tenants.ts";
import { drawPng, tempDir } from "../support/fixtures.ts";
import { tenantFtsTables } from "../support/sqlite-fts.ts";
import { forget, getSession, getThumbnail, listEntries } from "./scoped-reads.ts";
import { buildSessionWrite, runStoreConformance, spaces } from "./store-conformance.ts";

runStoreConformance("sqlite", async (t) => SqliteStore.open({ path: tempDir(t) }));

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
      knownSchemaVersions,
      "every known version, each once",
    );
    assert.deepEqual(
      knownSchemaVersions,
      knownSchemaVersions.map((_, index) => index + 1),
      "versions 1..N",
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

  it("migrates a schema-3 store: each tenant gets its own FTS tables and its own copy of a shared image", async (t) => {
    const dir = tempDir(t);
    const shared = await drawPng({ color: "#a50" });
    const orphan = await drawPng({ color: "#05a" });
    const hash = sha256(shared);
    // A store as schema 3 left it: one FTS table for all tenants (bodies start with the scope token),
    // blobs keyed by hash alone, files in blobs/<ab>/<hash>; plus an orphan file no row names.
    const old = new BetterSqlite3(join(dir, "cairn.db"));
    migrate(old, () => 1, 3);
    old
      .prepare("INSERT INTO blobs (hash, media_type, bytes, width, height) VALUES (?, 'image/png', ?, 64, 64)")
      .run(hash, shared.length);
    const scopes = [
      { key: "acme/ana/", text: "the otter by the mill" },
      { key: "globex/bo/", text: "an otter in the harbour" },
    ];
    for (const [index, { key, text }] of scopes.entries()) {
      const rowid = index + 1;
      old
        .prepare(
          "INSERT INTO sessions (rowid, id, scope_key, session_key, time_ms, content_hash, turn_count, image_count, created_ms) VALUES (?, ?, ?, 's', 0, 'h', 1, 1, 0)",
        )
        .run(rowid, `ses_${rowid}`, key);
      old
        .prepare(
          "INSERT INTO raw_nodes (rowid, id, scope_key, session_rowid, turn, text, time_ms, metadata) VALUES (?, ?, ?, ?, 0, ?, 0, '{}')",
        )
        .run(rowid, `rn_${rowid}`, key, rowid, text);
      const token = `s${sha256(key).slice(0, 24)}`;
      old.prepare("INSERT INTO fts_text (rowid, body) VALUES (?, ?)").run(rowid, `${token} ${text}`);
      old.prepare("INSERT INTO fts_image_text (rowid, body) VALUES (?, ?)").run(rowid, `${token} a photo of ${text}`);
      old
        .prepare("INSERT INTO raw_node_images (raw_node_rowid, ordinal, blob_hash, caption) VALUES (?, 0, ?, 'photo')")
        .run(rowid, hash);
    }
    old.prepare("INSERT INTO blob_vectors (blob_hash, space, vector) VALUES (?, 'image:x', x'0000803f')").run(hash);
    old.close();
    for (const [name, data] of [
      [hash, shared],
      [sha256(orphan), orphan],
    ] as const) {
      mkdirSync(join(dir, "blobs", name.slice(0, 2)), { recursive: true });
      mkdirSync(join(dir, "thumbs", name.slice(0, 2)), { recursive: true });
      writeFileSync(join(dir, "blobs", name.slice(0, 2), name), data);
      writeFileSync(join(dir, "thumbs", name.slice(0, 2), `${name}.webp`), "thumb");
    }

    const store = await SqliteStore.open({ path: dir });
    t.after(() => store.close());
    const acme = store.forScope({ tenant: "acme", user: "ana" });
    const globex = store.forScope({ tenant: "globex", user: "bo" });
    assert.deepEqual(
      (await acme.searchLexical("text", "otter", { limit: 10 })).map((hit) => hit.id),
      ["rn_1"],
    );
    assert.deepEqual(
      (await globex.searchLexical("imageText", "otter photo", { limit: 10 })).map((hit) => hit.id),
      ["rn_2"],
    );
    for (const scoped of [acme, globex]) {
      assert.deepEqual(Buffer.from((await scoped.readBlob(hash)).data), shared);
      assert.equal(
        (await scoped.readRawNodes({ sessionId: `ses_${scoped === acme ? 1 : 2}` }))[0]?.images[0]?.width,
        64,
      );
    }
    assert.equal((await acme.knownImages([hash], "image:x")).get(hash)?.vector?.[0], 1, "cached vectors move too");
    const [acmeFile, globexFile] = ["acme", "globex"].map((tenant) =>
      join(tenantStorage(tenant).token, hash.slice(0, 2), hash),
    ) as [string, string];
    assert.deepEqual(
      filesUnder(join(dir, "blobs")),
      [acmeFile, globexFile].sort(),
      "one file per owner; the shared layout and the orphan are gone",
    );
    assert.deepEqual(filesUnder(join(dir, "thumbs")), [`${acmeFile}.webp`, `${globexFile}.webp`].sort());
    const tables = store.db
      .prepare("SELECT name FROM sqlite_master WHERE name IN ('fts_text', 'fts_image_text')")
      .pluck()
      .all();
    assert.deepEqual(tables, [], "the shared FTS tables are dropped");
    // Forgetting acme's use deletes acme's copy only.
    const result = await forget(acme, { all: true }, spaces);
    assert.equal(result.blobsDeleted, 1);
    assert.deepEqual(filesUnder(join(dir, "blobs")), [globexFile]);
    assert.deepEqual(Buffer.from((await globex.readBlob(hash)).data), shared);
  });

  it("finds a scope's use of a known image through the index, without reading and sorting every use of it", async (t) => {
    // An image used thousands of times made each write that carried it read every use (issue 20's ingest profile).
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    await store.close();
    const plan = inspect(dir, (db) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${knownImageUse}`).all("scope", "hash") as { detail: string }[]).map(
        (row) => row.detail,
      ),
    );
    assert.ok(
      plan.some((detail) => detail.includes("USING INDEX raw_node_images_by_blob_text")),
      plan.join("; "),
    );
    assert.ok(!plan.some((detail) => detail.includes("TEMP B-TREE")), plan.join("; "));
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
    // orphan blob (files, no row), and a journal naming a blob whose row did commit, in tenant
    // acme's folder.
    const t1 = tenantStorage("acme").token;
    const orphan = await drawPng({ color: "#00a" });
    const orphanHash = sha256(orphan);
    mkdirSync(join(dir, "blobs", t1, orphanHash.slice(0, 2)), { recursive: true });
    mkdirSync(join(dir, "thumbs", t1, orphanHash.slice(0, 2)), { recursive: true });
    writeFileSync(join(dir, "blobs", t1, orphanHash.slice(0, 2), orphanHash), orphan);
    writeFileSync(join(dir, "thumbs", t1, orphanHash.slice(0, 2), `${orphanHash}.webp`), "thumb");
    writeFileSync(join(dir, "pending", "crashed-writer-1"), `${t1}/${orphanHash}`);
    writeFileSync(join(dir, "pending", "crashed-writer-2"), `${t1}/${sha256(kept)}\n${t1}/${orphanHash}\n`);

    const reopened = await SqliteStore.open({ path: dir });
    t.after(() => reopened.close());
    assert.deepEqual(filesUnder(join(dir, "pending")), [], "journals are settled");
    assert.deepEqual(filesUnder(join(dir, "blobs")), [join(t1, sha256(kept).slice(0, 2), sha256(kept))]);
    assert.deepEqual(filesUnder(join(dir, "thumbs")), [join(t1, sha256(kept).slice(0, 2), `${sha256(kept)}.webp`)]);
    assert.deepEqual(Buffer.from((await reopened.forScope(scope).readBlob(sha256(kept))).data), kept);
  });

  it("migration 8 indexes stored Chinese and Japanese text again as bigrams, and leaves English rows as they were", async (t) => {
    const dir = tempDir(t);
    const red = await drawPng({ color: "#c00" });
    const store = await SqliteStore.open({ path: dir });
    const a = store.forScope(scope);
    const written = await a.commitSession(
      await buildSessionWrite({
        key: "s",
        turns: [
          { text: "我昨天在东京买了一台新相机" },
          { text: "the quokka smiled on the island" },
          { text: "a photo", images: [{ data: red, caption: "夕焼けの海" }] },
        ],
      }),
    );
    const other = store.forScope({ tenant: "globex", user: "bo" });
    await other.commitSession(await buildSessionWrite({ key: "s", turns: [{ text: "週末は京都で抹茶を飲みました" }] }));
    const english = await a.searchLexical("text", "quokka island", { limit: 10 });
    // As a store before migration 8 held them: the raw text after the scope token, and version 8 unapplied.
    for (const [tenant, key] of [
      ["acme", "acme/ana/"],
      ["globex", "globex/bo/"],
    ] as const) {
      const storage = tenantStorage(tenant);
      const token = `s${sha256(key).slice(0, 24)}`;
      for (const [table, column] of [
        [storage.textTable, "r.text"],
        [
          storage.imageTextTable,
          "(SELECT group_concat(caption, ' ') FROM raw_node_images WHERE raw_node_rowid = r.rowid)",
        ],
      ] as const) {
        const rows = store.db
          .prepare(`SELECT f.rowid AS rowid, ${column} AS body FROM ${table} f JOIN raw_nodes r ON r.rowid = f.rowid`)
          .all() as { rowid: number; body: string }[];
        for (const row of rows) {
          store.db.prepare(`DELETE FROM ${table} WHERE rowid = ?`).run(row.rowid);
          store.db.prepare(`INSERT INTO ${table} (rowid, body) VALUES (?, ?)`).run(row.rowid, `${token} ${row.body}`);
        }
      }
    }
    // Such a store predates the lexical index too (migration 12 builds it after 8 has run): here it is
    // built from the old rows, so searches before the reopen see what that store's FTS5 saw.
    for (const tenant of ["acme", "globex"]) rebuildLexicalIndex(store.db, tenantStorage(tenant));
    store.db.prepare("DELETE FROM schema_migrations WHERE version IN (8, 12)").run();
    assert.deepEqual(await a.searchLexical("text", "相机", { limit: 10 }), [], "the old index misses a word in a run");
    await store.close();

    const migrated = await SqliteStore.open({ path: dir });
    t.after(() => migrated.close());
    const [camera, , photo] = written.rawNodeIds;
    const found = async (scoped: ReturnType<SqliteStore["forScope"]>, field: "text" | "imageText", query: string) =>
      (await scoped.searchLexical(field, query, { limit: 10 })).map((hit) => hit.id);
    assert.deepEqual(await found(migrated.forScope(scope), "text", "相机"), [camera]);
    assert.deepEqual(await found(migrated.forScope(scope), "imageText", "夕焼け"), [photo]);
    assert.equal((await found(migrated.forScope({ tenant: "globex", user: "bo" }), "text", "抹茶")).length, 1);
    assert.deepEqual(await migrated.forScope(scope).searchLexical("text", "quokka island", { limit: 10 }), english);
  });

  it("removes a half-written temporary blob file left by a writer killed mid-write", async (t) => {
    const dir = tempDir(t);
    await (await SqliteStore.open({ path: dir })).close();
    const hash = sha256("never committed");
    const t1 = tenantStorage("acme").token;
    mkdirSync(join(dir, "blobs", t1, hash.slice(0, 2)), { recursive: true });
    writeFileSync(join(dir, "blobs", t1, hash.slice(0, 2), `${hash}.0b1c2d3e-0000-4000-8000-000000000000.tmp`), "half");
    writeFileSync(join(dir, "pending", "crashed-writer"), `${t1}/${hash}`);
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
      ...tenantFtsTables(store.db),
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
