import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { Database } from "better-sqlite3";
import { scopeKey } from "../../src/core/scope.ts";
import { defaultMaintenanceConfig } from "../../src/maintain/config.ts";
import { forgetWithRepair } from "../../src/maintain/forget.ts";
import type { RawNode } from "../../src/store/records.ts";
import { lexicalTables, rebuildLexicalIndex } from "../../src/store/sqlite/lexical-index.ts";
import { blockBound, decodePostings, encodeChunk, idf } from "../../src/store/sqlite/lexical-postings.ts";
import { queryTokens } from "../../src/store/sqlite/lexical-tokens.ts";
import { verifyLexicalIndex } from "../../src/store/sqlite/lexical-verify.ts";
import { createScopeContext, scopeTokenOf } from "../../src/store/sqlite/scope-context.ts";
import { type SearchLexicalTrace, searchLexical, useLexicalPass } from "../../src/store/sqlite/search-lexical.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { tenantStorage } from "../../src/store/sqlite/tenants.ts";
import { tempDir } from "../support/fixtures.ts";
import { zipfCorpus } from "../support/zipf-corpus.ts";
import { buildSessionWrite, spaces, textEmbedder } from "./conformance-support.ts";
import { forget } from "./scoped-reads.ts";

/**
 * Cairn's own lexical index (decision 030) must rank exactly as FTS5 ranks every match: the same
 * scores (to 1e-9) and ids up to ties, on a corpus where common words match thousands of documents,
 * for one scope and for a scope sharing its tenant's tables (FTS5 then scores the scope token),
 * with filters; a forget must leave no posting or dictionary term of what it removed.
 */
const scope = { tenant: "acme", user: "ana" };
const otherScope = { tenant: "acme", user: "bo" };
const vocabulary = Array.from({ length: 400 }, (_, index) => `w${index.toString(36)}x`);

function corpus(seed: number, documents: number): string[] {
  return zipfCorpus(seed, documents, vocabulary);
}

async function fill(store: SqliteStore, target: typeof scope, texts: readonly string[], prefix = "s") {
  const speakers = ["Ana", "Bo", "Cy"];
  for (let start = 0, session = 0; start < texts.length; start += 200, session++) {
    const turns = texts
      .slice(start, start + 200)
      .map((text, index) => ({ speaker: speakers[index % speakers.length], text }));
    await store.forScope(target).commitSession(await buildSessionWrite({ key: `${prefix}${session}`, turns }));
  }
}

const queries: string[] = [];
for (let index = 0; index < 30; index++) {
  const common = [0, 1, 2].slice(0, 1 + (index % 3)).map((offset) => vocabulary[(index + offset) % 6]);
  const rare = [vocabulary[20 + ((index * 7) % 300)], index % 2 ? vocabulary[60 + ((index * 13) % 300)] : null];
  queries.push([...rare, ...common].filter(Boolean).join(" "));
}

/** FTS5 ranking every match of the query the store issues (scope token ANDed in when FTS5's path does). */
function exhaustive(db: Database, target: typeof scope, query: string, limit: number, speaker?: string) {
  const key = scopeKey(target);
  const table = tenantStorage(target.tenant).textTable;
  const otherScopes = db.prepare("SELECT count(DISTINCT scope_key) FROM raw_nodes").pluck().get() as number;
  const phrases = [...new Set(query.split(" "))].map((word) => `"${word}"`).join(" OR ");
  const match = otherScopes > 1 ? `${scopeTokenOf(key)} AND (${phrases})` : phrases;
  return db
    .prepare(
      `SELECT r.id, -f.rank AS score FROM ${table} f JOIN raw_nodes r ON r.rowid = f.rowid
         WHERE ${table} MATCH ? AND r.scope_key = ? ${speaker ? "AND r.speaker = ?" : ""} ORDER BY f.rank LIMIT ?`,
    )
    .all(match, key, ...(speaker ? [speaker] : []), limit) as { id: string; score: number }[];
}

/** Same scores in the same order; ids equal except where neighbouring scores tie. */
function assertSameRanking(actual: readonly { id: string; score: number }[], expected: typeof actual, label: string) {
  assert.equal(actual.length, expected.length, `${label}: length`);
  const tied = (list: typeof actual, score: number) =>
    list
      .filter((hit) => Math.abs(hit.score - score) < 1e-9)
      .map((hit) => hit.id)
      .sort();
  const last = (expected.at(-1) as { score: number } | undefined)?.score;
  for (const [index, hit] of expected.entries()) {
    const got = actual[index] as { id: string; score: number };
    assert.ok(Math.abs(got.score - hit.score) < 1e-9, `${label}: score at ${index} ${got.score} ≠ ${hit.score}`);
    if (got.id === hit.id || (last !== undefined && Math.abs(hit.score - last) < 1e-9)) continue;
    assert.deepEqual(tied(actual, hit.score), tied(expected, hit.score), `${label}: ids at ${index}`);
  }
}

function search(store: SqliteStore, target: typeof scope, query: string, limit: number, speaker?: string) {
  const context = createScopeContext(store.db, scopeKey(target), store);
  const trace: SearchLexicalTrace = {};
  const filters = speaker ? { speakers: [speaker] } : undefined;
  const hits = searchLexical(context, "text", query, { limit, ...(filters ? { filters } : {}) }, trace);
  return { hits, trace };
}

describe("lexical index (SQLite)", () => {
  it("ranks exactly as FTS5's exhaustive pass, alone in its tenant and beside another scope, with filters", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    t.after(() => store.close());
    await fill(store, scope, corpus(7, 3000));
    assert.deepEqual(verifyLexicalIndex(store.db, tenantStorage(scope.tenant)), []);
    const check = (label: string) => {
      let decoded = 0;
      let blocks = 0;
      for (const limit of [10, 100]) {
        for (const [index, query] of queries.entries()) {
          const speaker = index % 4 === 3 ? "Bo" : undefined;
          const { hits, trace } = search(store, scope, query, limit, speaker);
          assert.equal(trace.pass, "index");
          const expected = exhaustive(store.db, scope, query, limit, speaker);
          assertSameRanking(hits, expected, `${label} "${query}" top ${limit}`);
          // Stricter than the equality above: FTS5's very scores, bit for bit, and its order of equal
          // scores (rowid), so even documents tied at the cut are the same ones.
          assert.deepEqual(hits, expected, `${label} "${query}" top ${limit}: bit-identical`);
          decoded += trace.walk?.decoded ?? 0;
          blocks += trace.walk?.blocks ?? 0;
        }
      }
      // Not a timing: the walk must actually skip blocks, not read every list whole.
      assert.ok(decoded < blocks * 0.9, `${label}: decoded ${decoded} of ${blocks} blocks`);
    };
    check("one scope");
    // Another scope in the tenant: FTS5 ANDs the scope token in and scores it; the other scope's
    // rows share every list and must be kept out.
    await fill(store, otherScope, corpus(8, 1500));
    assert.deepEqual(verifyLexicalIndex(store.db, tenantStorage(scope.tenant)), []);
    check("beside another scope");
  });

  it("follows every write after a search, on its own connection and on another, though it keeps block bounds between searches", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    t.after(() => store.close());
    await fill(store, scope, corpus(21, 2000));
    const check = (label: string) => {
      for (const query of queries.slice(0, 12)) {
        assert.deepEqual(
          search(store, scope, query, 30).hits,
          exhaustive(store.db, scope, query, 30),
          `${label} "${query}"`,
        );
      }
    };
    check("first");
    check("again, from the kept bounds");
    // New sealed blocks on this connection: documents repeating the queries' words rank first.
    await fill(
      store,
      scope,
      corpus(22, 1200).map((text) => `${text} ${text}`),
      "later",
    );
    check("after this connection's writes");
    // Another connection (another process, as far as SQLite can tell) writes and forgets.
    const other = await SqliteStore.open({ path: dir });
    await fill(
      other,
      scope,
      corpus(23, 800).map((text) => `${text} ${text} ${text}`),
      "elsewhere",
    );
    check("after another connection's writes");
    await forget(
      other.forScope(scope),
      { session: (await other.forScope(scope).readSessions({ keys: ["elsewhere0"] }))[0]?.id as string },
      spaces,
    );
    await other.close();
    check("after another connection's forget");
  });

  it("answers a word FTS5 reads as several tokens through FTS5, with the same ranking", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    t.after(() => store.close());
    // U+19B0 is a letter to JavaScript's regular expressions but a separator to unicode61's tables.
    await fill(store, scope, ["abᦰcd w0x", "ab cd", "cd ab w0x", "w0x w1x"]);
    const { hits, trace } = search(store, scope, "abᦰcd w0x", 10);
    assert.equal(trace.pass, "fts5-phrase");
    assert.deepEqual(
      hits.map((hit) => hit.id),
      exhaustive(store.db, scope, "abᦰcd w0x", 10).map((hit) => hit.id),
    );
    assert.equal(search(store, scope, "w0x cd", 10).trace.pass, "index");
  });

  it("keeps the FTS5 pass one switch away, with the same results", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    t.after(() => store.close());
    await fill(store, scope, corpus(9, 600));
    for (const query of queries.slice(0, 10)) {
      const index = search(store, scope, query, 20);
      const before = useLexicalPass("fts5");
      try {
        const fts5 = search(store, scope, query, 20);
        assert.equal(fts5.trace.pass, "fts5");
        assertSameRanking(index.hits, fts5.hits, query);
      } finally {
        useLexicalPass(before);
      }
    }
  });

  it("bounds every posting of every block, and a wrong bound changes results (the equality test would catch it)", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    t.after(() => store.close());
    await fill(store, scope, corpus(7, 3000));
    const tables = lexicalTables(tenantStorage(scope.tenant), "text");
    const [rows, tokens] = store.db.prepare(`SELECT docs, tokens FROM ${tables.scopes} WHERE ord = 0`).raw().get() as [
      number,
      number,
    ];
    const average = tokens / rows;
    const blockRows = store.db.prepare(`SELECT max_tf, min_len, postings FROM ${tables.blocks}`).all() as {
      max_tf: number;
      min_len: number;
      postings: Uint8Array;
    }[];
    assert.ok(blockRows.length > 50, `${blockRows.length} sealed blocks`);
    for (const block of blockRows) {
      const postings = decodePostings(block.postings);
      const bound = blockBound(block.max_tf, block.min_len, average);
      postings.docs.forEach((_, index) => {
        const tf = postings.tfs[index] as number;
        const length = postings.lengths[index] as number;
        assert.ok(blockBound(tf, length, average) <= bound + 1e-12);
      });
    }
    assert.ok(idf(100, 90) === 1e-6 && idf(100, 1) > 0);
    // Understate the bounds of the commonest words' blocks: the walk then skips blocks that hold top
    // documents, and its ranking departs from FTS5's; the index's own check says why.
    store.db
      .prepare(`UPDATE ${tables.blocks} SET max_tf = 1, min_len = 1000 WHERE term_id IN
                  (SELECT id FROM ${tables.terms} WHERE term IN ('w0x', 'w1x', 'w2x', 'w3x'))`)
      .run();
    let differing = 0;
    for (const query of queries) {
      const { hits } = search(store, scope, query, 10);
      const expected = exhaustive(store.db, scope, query, 10);
      if (hits.some((hit, index) => Math.abs(hit.score - (expected[index]?.score ?? 0)) > 1e-9)) differing++;
    }
    assert.ok(differing > 0, "understated bounds went unnoticed");
    assert.ok(verifyLexicalIndex(store.db, tenantStorage(scope.tenant)).some((problem) => problem.includes("bounds")));
  });

  it("is verified term by term against FTS5's own tokens: a changed posting, a lost term, a scope's count", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    t.after(() => store.close());
    await fill(store, scope, corpus(9, 700));
    await fill(store, otherScope, corpus(10, 300));
    const storage = tenantStorage(scope.tenant);
    const tables = lexicalTables(storage, "text");
    assert.deepEqual(verifyLexicalIndex(store.db, storage), []);
    // A tail whose first posting says tf 9 (a common word's tail holds several postings).
    const row = store.db
      .prepare(`SELECT id, term, tail FROM ${tables.terms} WHERE tail_n > 1 ORDER BY df DESC LIMIT 1`)
      .get() as { id: number; term: string; tail: Uint8Array };
    const tail = decodePostings(row.tail);
    const changed = tail.docs.map((doc, index) => ({
      doc,
      tf: index === 0 ? 9 : (tail.tfs[index] as number),
      length: tail.lengths[index] as number,
      scope: tail.scopes[index] as number,
    }));
    store.db.prepare(`UPDATE ${tables.terms} SET tail = ? WHERE id = ?`).run(encodeChunk(changed), row.id);
    const problems = verifyLexicalIndex(store.db, storage);
    assert.ok(
      problems.some(
        (problem) => problem.startsWith(`text "${row.term}": posting 0`) || problem.includes(`"${row.term}": the tail`),
      ),
      problems.join("\n"),
    );
    // The rest of the index still agrees: only that term is named.
    assert.ok(
      problems.every((problem) => problem.includes(`"${row.term}"`)),
      problems.join("\n"),
    );
    store.db.prepare(`UPDATE ${tables.terms} SET tail = ? WHERE id = ?`).run(row.tail, row.id);
    assert.deepEqual(verifyLexicalIndex(store.db, storage), []);

    store.db.prepare(`UPDATE ${tables.scopes} SET tokens = tokens + 3 WHERE scope_key = ?`).run(scopeKey(otherScope));
    assert.ok(
      verifyLexicalIndex(store.db, storage).some((problem) =>
        problem.includes(`scope ${scopeKey(otherScope)} statistics`),
      ),
    );
    store.db.prepare(`UPDATE ${tables.scopes} SET tokens = tokens - 3 WHERE scope_key = ?`).run(scopeKey(otherScope));
    // A term the dictionary lost (its blocks left behind) is missing; FTS5 still holds it.
    const lost = store.db.prepare(`SELECT term FROM ${tables.terms} ORDER BY df LIMIT 1`).pluck().get() as string;
    store.db.prepare(`DELETE FROM ${tables.terms} WHERE term = ?`).run(lost);
    assert.deepEqual(verifyLexicalIndex(store.db, storage), [
      `text "${lost}": in FTS5's rows, missing from the dictionary`,
    ]);
    // The repair path builds it all again from FTS5's rows.
    store.db.transaction(() => rebuildLexicalIndex(store.db, storage))();
    assert.deepEqual(verifyLexicalIndex(store.db, storage), []);
  });

  it("forgets: the forgotten rows' postings go, and every term only they held leaves the dictionary and the file", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    t.after(() => store.close());
    await fill(store, scope, corpus(5, 900));
    const marker = `zq${Math.random().toString(36).slice(2, 10)}marker`;
    const session = await store.forScope(scope).commitSession(
      await buildSessionWrite({
        key: "secret",
        turns: [
          { speaker: "Ana", text: `${marker} w0x w1x` },
          { speaker: "Bo", text: `w0x ${marker} ${marker}` },
        ],
      }),
    );
    const tables = lexicalTables(tenantStorage(scope.tenant), "text");
    // The dictionary holds FTS5's token (Porter-stemmed), not the word as written.
    const token = queryTokens([marker])[0] as string;
    const hasTerm = () => store.db.prepare(`SELECT 1 FROM ${tables.terms} WHERE term = ?`).get(token) !== undefined;
    assert.ok(hasTerm());
    assert.equal(search(store, scope, marker, 10).hits.length, 2);
    await forget(store.forScope(scope), { session: session.session.id }, spaces);
    assert.equal(hasTerm(), false);
    assert.deepEqual(verifyLexicalIndex(store.db, tenantStorage(scope.tenant)), []);
    assert.equal(search(store, scope, marker, 10).hits.length, 0);
    for (const query of queries.slice(0, 8)) {
      assertSameRanking(search(store, scope, query, 20).hits, exhaustive(store.db, scope, query, 20), query);
    }
    store.db.pragma("wal_checkpoint(TRUNCATE)");
    for (const name of ["cairn.db", "cairn.db-wal"]) {
      let bytes: Buffer;
      try {
        bytes = readFileSync(join(dir, name));
      } catch {
        continue;
      }
      for (const needle of [marker, token]) {
        assert.equal(bytes.includes(Buffer.from(needle)), false, `${needle} lingers in ${name}`);
      }
    }
  });

  it("follows a forget that writes surviving neighbours' rows again (rowids rewritten in place)", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    t.after(() => store.close());
    await fill(store, scope, corpus(6, 1200));
    const written = await store.forScope(scope).commitSession(
      await buildSessionWrite({
        key: "meals",
        turns: [{ text: "breakfast w0x" }, { text: "lunch w1x w2x" }, { text: "dinner w0x w3x" }],
      }),
    );
    const [, lunch] = written.rawNodeIds;
    const rederive = {
      embedder: textEmbedder,
      indexTexts: (nodes: readonly RawNode[]) => nodes.map((node) => `${node.text} quokkarederived`),
      neighbours: 1,
    };
    await forgetWithRepair(
      store.forScope(scope),
      { rawNode: lunch as string },
      spaces,
      defaultMaintenanceConfig.bounds,
      rederive,
    );
    assert.deepEqual(verifyLexicalIndex(store.db, tenantStorage(scope.tenant)), []);
    // The neighbours' rows now hold the re-derived text: found by its word, ranked as FTS5 ranks them.
    assert.equal(search(store, scope, "quokkarederived", 10).hits.length, 2);
    for (const query of ["quokkarederived w0x", ...queries.slice(0, 6)]) {
      const expected = exhaustive(store.db, scope, query, 20);
      assert.deepEqual(search(store, scope, query, 20).hits, expected, query);
    }
  });

  it("is built by the migration for a store written before it", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    await fill(store, scope, corpus(3, 700));
    await fill(store, otherScope, corpus(4, 300));
    // What a store from before the index looks like: no index tables, migration 12 not applied.
    const storage = tenantStorage(scope.tenant);
    for (const field of ["text", "imageText"] as const) {
      const tables = lexicalTables(storage, field);
      store.db.exec(`DROP TABLE ${tables.terms}; DROP TABLE ${tables.blocks}; DROP TABLE ${tables.scopes};`);
    }
    store.db.prepare("DELETE FROM schema_migrations WHERE version = 12").run();
    await store.close();
    const reopened = await SqliteStore.open({ path: dir });
    t.after(() => reopened.close());
    assert.deepEqual(verifyLexicalIndex(reopened.db, storage), []);
    for (const query of queries.slice(0, 10)) {
      const { hits, trace } = search(reopened, scope, query, 10);
      assert.equal(trace.pass, "index");
      assertSameRanking(hits, exhaustive(reopened.db, scope, query, 10), query);
    }
  });
});
