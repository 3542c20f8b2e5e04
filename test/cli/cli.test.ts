import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { cairnEntry } from "../support/compiled.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";
import { snapshotTree } from "../support/store-snapshot.ts";

/** The CLI's entry: bin/cairn.js's module, compiled once for the run (test/support/compiled.ts). */
const bin = cairnEntry();

function cairn(args: string[], cwd?: string) {
  const result = spawnSync(process.execPath, [bin, ...args, "--profile", "hash"], {
    encoding: "utf8",
    cwd,
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function session(key: string, turns: unknown[], extra: Record<string, unknown> = {}) {
  return JSON.stringify({ session: key, user: "ana", time: "2024-05-08T13:56:00Z", turns, ...extra });
}

async function fixture(t: { after: (fn: () => void) => void }) {
  const dir = tempDir(t);
  mkdirSync(join(dir, "img"));
  writeFile(dir, "img/kayak.png", await drawPng({ shape: "square", color: "#f80", background: "#39f" }));
  writeFile(dir, "img/stripes.png", await drawPng({ shape: "stripes", color: "#080" }));
  const good = [
    session("s1", [
      { speaker: "Ana", text: "We rented a kayak on Lake Bled last weekend." },
      {
        speaker: "Ana",
        text: "Look at it!",
        images: [{ path: "img/kayak.png", caption: "orange kayak on blue water" }],
      },
    ]),
    session("s2", [{ speaker: "Ana", text: "My sister's wedding is in Porto in October." }], {
      time: "2024-06-01T09:00:00Z",
    }),
    session(
      "s3",
      [{ speaker: "Ben", text: "Green striped towel for the beach", images: [{ path: "img/stripes.png" }] }],
      {
        user: "ben",
      },
    ),
  ];
  writeFile(dir, "good.jsonl", `${good.join("\n")}\n`);
  return { dir, db: join(dir, "store") };
}

describe("cairn CLI as a process", () => {
  it("ingests a JSONL file, searches text→image and image→image, shows and forgets", async (t) => {
    const { dir, db } = await fixture(t);
    const ingest = cairn(["ingest", "--tenant", "default", join(dir, "good.jsonl"), "--db", db, "--json"]);
    assert.equal(ingest.code, 0, ingest.stderr);
    const summary = JSON.parse(ingest.stdout);
    assert.equal(summary.added, 3);
    assert.equal(summary.rawNodes, 4);

    const again = JSON.parse(
      cairn(["ingest", "--tenant", "default", join(dir, "good.jsonl"), "--db", db, "--json"]).stdout,
    );
    assert.equal(again.added, 0, "re-ingesting the same file adds nothing");
    assert.equal(again.duplicates, 3);

    const textToImage = cairn([
      "search",
      "--tenant",
      "default",
      "kayak water photo",
      "--user",
      "ana",
      "--db",
      db,
      "--json",
    ]);
    assert.equal(textToImage.code, 0, textToImage.stderr);
    const pack = JSON.parse(textToImage.stdout);
    const withImage = pack.items.find((item: { images: unknown[] }) => item.images.length > 0);
    assert.ok(withImage, "the kayak image is in the pack");
    assert.equal(withImage.images[0].caption, "orange kayak on blue water");
    assert.ok(withImage.channels.imageText, "found through image-derived text");
    assert.equal(withImage.provenance.sessionKey, "s1");
    assert.ok(
      !pack.items.some((item: { provenance: { speaker: string } }) => item.provenance.speaker === "Ben"),
      "ben's scope is invisible to ana",
    );

    const imageQuery = cairn([
      "search",
      "--tenant",
      "default",
      "--image",
      join(dir, "img/kayak.png"),
      "--user",
      "ana",
      "--db",
      db,
      "--json",
    ]);
    const imagePack = JSON.parse(imageQuery.stdout);
    assert.equal(imagePack.items[0].rawNodeId, withImage.rawNodeId, "image→image finds the same photo first");
    assert.equal(imagePack.items[0].channels.imageVector.rank, 1);

    const human = cairn(["search", "--tenant", "default", "wedding in Porto", "--user", "ana", "--db", db]);
    assert.match(human.stdout, /wedding is in Porto/);
    assert.match(human.stdout, /budget: \d+\/12 raw nodes/);

    const show = cairn(["show", "--tenant", "default", withImage.rawNodeId, "--user", "ana", "--db", db, "--json"]);
    assert.equal(JSON.parse(show.stdout).images[0].origin, "img/kayak.png");
    assert.equal(
      cairn(["show", "--tenant", "default", withImage.rawNodeId, "--user", "ben", "--db", db]).code,
      3,
      "other scope: not found",
    );

    const forget = cairn(["forget", "--tenant", "default", "--session", "s1", "--user", "ana", "--db", db, "--json"]);
    assert.equal(forget.code, 0, forget.stderr);
    assert.equal(JSON.parse(forget.stdout).rawNodes, 2);
    const after = JSON.parse(
      cairn(["search", "--tenant", "default", "kayak", "--user", "ana", "--db", db, "--json"]).stdout,
    );
    assert.ok(!after.items.some((item: { text: string }) => item.text.includes("kayak")));
    assert.equal(cairn(["show", "--tenant", "default", withImage.rawNodeId, "--user", "ana", "--db", db]).code, 3);
  });

  it("rejects bad input with a typed error, a non-zero exit and an unchanged store", async (t) => {
    const { dir, db } = await fixture(t);
    assert.equal(cairn(["ingest", "--tenant", "default", join(dir, "good.jsonl"), "--db", db]).code, 0);
    const before = snapshotTree(db);
    const outside = tempDir(t);
    writeFile(outside, "secret.png", await drawPng({ shape: "circle" }));
    symlinkSync(join(outside, "secret.png"), join(dir, "img/link.png"));
    writeFile(dir, "corrupt.png", "definitely not a png");
    const valid = session("new", [{ text: "fine line that must not be written either" }]);
    const cases: { name: string; lines: string[]; field: RegExp }[] = [
      { name: "malformed JSON", lines: [valid, "{not json"], field: /^line 2$/ },
      {
        name: "missing field",
        lines: [valid, JSON.stringify({ session: "x", turns: [{ text: "a" }] })],
        field: /^line 2: time$/,
      },
      { name: "empty session", lines: [session("e", [])], field: /^line 1: turns$/ },
      {
        name: "empty text",
        lines: [valid, session("e", [{ speaker: "Ana", text: "  " }])],
        field: /^line 2: turns\[0\]$/,
      },
      {
        name: "missing image",
        lines: [valid, session("m", [{ images: [{ path: "img/nope.png" }] }])],
        field: /images\[0\]\.path/,
      },
      { name: "corrupt image", lines: [session("c", [{ images: [{ path: "corrupt.png" }] }])], field: /images\[0\]$/ },
      {
        name: "escaping path",
        lines: [session("p", [{ images: [{ path: "../x.png" }] }])],
        field: /images\[0\]\.path/,
      },
      {
        name: "symlink out",
        lines: [session("l", [{ images: [{ path: "img/link.png" }] }])],
        field: /images\[0\]\.path/,
      },
      {
        name: "url image",
        lines: [session("u", [{ images: [{ url: "https://example.com/a.png" }] }])],
        field: /images\[0\]\.url/,
      },
      { name: "bad scope", lines: [session("b", [{ text: "x" }], { user: "../etc" })], field: /^line 1: scope\.user$/ },
      { name: "oversize text", lines: [session("o", [{ text: "x".repeat(100_001) }])], field: /turns\[0\]\.text/ },
    ];
    for (const testCase of cases) {
      const file = writeFile(dir, "bad.jsonl", testCase.lines.join("\n"));
      const result = cairn(["ingest", "--tenant", "default", file, "--db", db, "--json"]);
      assert.equal(result.code, 2, `${testCase.name}: exit code (stderr ${result.stderr})`);
      const { error } = JSON.parse(result.stderr);
      assert.equal(error.code, "input", testCase.name);
      assert.match(error.field, testCase.field, `${testCase.name}: field ${error.field}`);
      assert.deepEqual(snapshotTree(db), before, `${testCase.name}: store unchanged`);
    }
  });

  it("answers usage errors with exit 2 and help with exit 0", () => {
    assert.equal(cairn(["search", "--tenant", "default"]).code, 2);
    assert.equal(cairn(["frobnicate"]).code, 2);
    const help = cairn(["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /cairn ingest/);
  });

  it("cairn check verifies every scope's index and exits 6 on a broken one", async (t) => {
    const { dir, db } = await fixture(t);
    assert.equal(cairn(["ingest", "--tenant", "default", join(dir, "good.jsonl"), "--db", db]).code, 0);
    const ok = cairn(["check", "--db", db, "--json"]);
    assert.equal(ok.code, 0, ok.stderr);
    const report = JSON.parse(ok.stdout);
    assert.equal(report.violations, 0);
    assert.deepEqual(
      report.scopes.map((entry: { scope: { user: string } }) => entry.scope.user),
      ["ana", "ben"],
      "every scope of the store is checked",
    );
    assert.equal(report.scopes[0].check.rawNodes, 3);
    assert.equal(report.scopes[0].check.utilisation.pointers, 3);

    // Break provenance behind Cairn's back: a pointer row removed from the index.
    const Database = (await import("better-sqlite3")).default;
    const raw = new Database(join(db, "cairn.db"));
    raw
      .prepare(
        "DELETE FROM index_pointers WHERE (entry_rowid, raw_node_rowid) = (SELECT entry_rowid, raw_node_rowid FROM index_pointers LIMIT 1)",
      )
      .run();
    raw.close();
    const broken = cairn(["check", "--db", db]);
    assert.equal(broken.code, 6, broken.stdout + broken.stderr);
    assert.match(broken.stdout, /provenance: raw node rn_\w+ is unreachable from the active index/);
  });

  it("cairn check verifies each tenant's lexical index against its text, and --repair rebuilds it", async (t) => {
    const { dir, db } = await fixture(t);
    assert.equal(cairn(["ingest", "--tenant", "default", join(dir, "good.jsonl"), "--db", db]).code, 0);
    const before = cairn(["search", "kayak", "--tenant", "default", "--user", "ana", "--db", db, "--json"]);
    assert.equal(before.code, 0, before.stderr);
    const clean = JSON.parse(cairn(["check", "--db", db, "--json"]).stdout);
    assert.deepEqual(clean.lexical, [{ tenant: "default", problems: [] }]);

    const Database = (await import("better-sqlite3")).default;
    const damage = (sql: string) => {
      const raw = new Database(join(db, "cairn.db"));
      // Off defensive mode, so FTS5's shadow tables can be damaged as a disk fault would.
      raw.unsafeMode(true);
      const changes = raw.prepare(sql).run().changes;
      raw.close();
      assert.ok(changes > 0, `damaged: ${sql}`);
    };
    const table = (like: string) => {
      const raw = new Database(join(db, "cairn.db"), { readonly: true });
      const name = raw
        .prepare("SELECT name FROM sqlite_master WHERE name LIKE ? ORDER BY length(name), name")
        .pluck()
        .get(like);
      raw.close();
      assert.ok(typeof name === "string", `a table like ${like}`);
      return name;
    };
    // Cairn's index behind FTS5's back: a term's document count off by one, and a term gone.
    const terms = table("lex_text_%_terms");
    damage(`UPDATE ${terms} SET df = df + 1 WHERE id = (SELECT min(id) FROM ${terms})`);
    damage(`DELETE FROM ${terms} WHERE id = (SELECT max(id) FROM ${terms})`);
    const broken = cairn(["check", "--db", db]);
    assert.equal(broken.code, 6, broken.stdout + broken.stderr);
    assert.match(broken.stdout, /lexical: text "\S+": df \d+ for \d+ postings/);
    assert.match(broken.stdout, /lexical: text "\S+": in FTS5's rows, missing from the dictionary/);

    // FTS5's own index damaged too: its integrity-check names it, and the repair rebuilds both.
    const fts = table("fts_text_%");
    damage(`DELETE FROM ${fts}_data WHERE id = (SELECT max(id) FROM ${fts}_data)`);
    const worse = cairn(["check", "--db", db]);
    assert.equal(worse.code, 6);
    assert.match(worse.stdout, /integrity-check failed/);

    const repaired = cairn(["check", "--db", db, "--repair", "--json"]);
    assert.equal(repaired.code, 0, repaired.stdout + repaired.stderr);
    const report = JSON.parse(repaired.stdout);
    assert.equal(report.lexical[0].repair.rebuilt, true);
    assert.match(report.lexical[0].repair.before.join("\n"), /integrity-check failed/);
    assert.deepEqual(report.lexical[0].problems, []);
    assert.equal(cairn(["check", "--db", db]).code, 0, "check is clean after the repair");
    const after = cairn(["search", "kayak", "--tenant", "default", "--user", "ana", "--db", db, "--json"]);
    assert.deepEqual(JSON.parse(after.stdout).items, JSON.parse(before.stdout).items, "search answers as before");
  });

  it("cairn check --repair re-hosts entries stranded by a broken link, rebuilds what re-hosting cannot fix, audited", async (t) => {
    const dir = tempDir(t);
    const db = join(dir, "store");
    const scope = { tenant: "default", user: "ana" };
    // Tight bounds, so entries overflow under hosts as in the stores the old forget damaged.
    const memory = await Memory.open({
      path: db,
      models: createHashModels(),
      maintenance: { bounds: { entries: 2, pages: 1 } },
    });
    const topics = ["kayak lake", "wedding porto", "garden tomatoes", "chess club", "bread oven", "train tickets"];
    for (const [index, topic] of topics.entries()) {
      await memory.addSession(scope, {
        session: `s${index}`,
        time: `2024-05-0${index + 1}T10:00:00Z`,
        turns: [{ speaker: "Ana", text: `we talked about ${topic} today` }],
      });
    }
    await memory.close();
    const Database = (await import("better-sqlite3")).default;
    const damage = (sql: string) => {
      const raw = new Database(join(db, "cairn.db"));
      const changes = raw.prepare(sql).run().changes;
      raw.close();
      assert.ok(changes > 0, `damaged: ${sql}`);
    };
    // The old bug's shape: an entry whose host link is gone, so it and its raw nodes are unreachable.
    damage(
      "UPDATE index_entries SET host = NULL WHERE rowid = (SELECT min(rowid) FROM index_entries WHERE host IS NOT NULL)",
    );
    const broken = cairn(["check", "--db", db]);
    assert.equal(broken.code, 6, broken.stdout + broken.stderr);
    const repaired = cairn(["check", "--db", db, "--repair", "--json"]);
    assert.equal(repaired.code, 0, repaired.stdout + repaired.stderr);
    const report = JSON.parse(repaired.stdout);
    assert.equal(report.violations, 0);
    assert.equal(report.scopes[0].repair.method, "rehost");
    assert.equal(report.scopes[0].repair.hosted.length, 1);
    assert.equal(cairn(["check", "--db", db]).code, 0, "check is clean after the repair");

    // A lost pointer row: nothing to re-host, so the scope's index is rebuilt from its raw nodes.
    damage(
      "DELETE FROM index_pointers WHERE (entry_rowid, raw_node_rowid) = (SELECT entry_rowid, raw_node_rowid FROM index_pointers LIMIT 1)",
    );
    assert.equal(cairn(["check", "--db", db]).code, 6);
    const rebuilt = cairn(["check", "--db", db, "--repair", "--json"]);
    assert.equal(rebuilt.code, 0, rebuilt.stdout + rebuilt.stderr);
    assert.equal(JSON.parse(rebuilt.stdout).scopes[0].repair.method, "rebuild");
    assert.equal(cairn(["check", "--db", db]).code, 0);

    const reopened = await Memory.open({ path: db, models: createHashModels() });
    t.after(() => reopened.close());
    const actions = (await reopened.listAudit(scope, { limit: 1000 })).map((event) => event.action);
    assert.ok(actions.includes("index.repair"), `audited: ${actions.join(", ")}`);
    assert.ok(actions.includes("index.rebuild"));
    const pack = await reopened.search(scope, "wedding porto", { mode: "route" });
    assert.ok(
      pack.items.some((item) => item.text.includes("wedding porto")),
      "route search finds it again",
    );
  });
});
