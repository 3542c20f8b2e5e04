import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import { toPhrases } from "../../src/store/sqlite/fts-query.ts";
import { type LexicalTrace, topLexical } from "../../src/store/sqlite/lexical-top-k.ts";
import { scopeTokenOf } from "../../src/store/sqlite/scope-context.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { tenantStorage } from "../../src/store/sqlite/tenants.ts";
import { tempDir } from "../support/fixtures.ts";
import { zipfCorpus } from "../support/zipf-corpus.ts";
import { buildSessionWrite } from "./conformance-support.ts";

/**
 * The bounded lexical pass (decision 021) must return what FTS5 returns when it ranks every match:
 * checked against FTS5's own exhaustive `ORDER BY rank` on a corpus where common words match
 * thousands of documents and rare ones a handful, with and without another scope in the table.
 */
const scope = { tenant: "acme", user: "ana" };
const otherScope = { tenant: "acme", user: "bo" };

function corpus(seed: number, documents: number, words: readonly string[]): string[] {
  return zipfCorpus(seed, documents, words);
}

const vocabulary = Array.from({ length: 400 }, (_, index) => `w${index.toString(36)}x`);

async function fill(store: SqliteStore, target: typeof scope, texts: readonly string[], speakers: readonly string[]) {
  for (let start = 0, session = 0; start < texts.length; start += 200, session++) {
    const turns = texts
      .slice(start, start + 200)
      .map((text, index) => ({ speaker: speakers[index % speakers.length], text }));
    await store.forScope(target).commitSession(await buildSessionWrite({ key: `s${session}`, turns }));
  }
}

interface Oracle {
  db: BetterSqlite3.Database;
  table: string;
  scopeKey: string;
}

/** FTS5 ranking every match, as the store did before decision 021. */
function exhaustive(oracle: Oracle, match: string, limit: number, speaker?: string) {
  return oracle.db
    .prepare(
      `SELECT r.id, -f.rank AS score FROM ${oracle.table} f JOIN raw_nodes r ON r.rowid = f.rowid
         WHERE ${oracle.table} MATCH ? AND r.scope_key = ? ${speaker ? "AND r.speaker = ?" : ""} ORDER BY f.rank LIMIT ?`,
    )
    .all(match, oracle.scopeKey, ...(speaker ? [speaker] : []), limit) as { id: string; score: number }[];
}

/** Same scores in the same order; ids equal except where neighbouring scores tie. */
function assertSameRanking(actual: readonly { id: string; score: number }[], expected: typeof actual, label: string) {
  assert.equal(actual.length, expected.length, `${label}: length`);
  for (const [index, hit] of expected.entries()) {
    const got = actual[index] as { id: string; score: number };
    assert.ok(Math.abs(got.score - hit.score) < 1e-9, `${label}: score at ${index} ${got.score} ≠ ${hit.score}`);
  }
  const tied = (list: typeof actual, score: number) =>
    list
      .filter((hit) => Math.abs(hit.score - score) < 1e-9)
      .map((hit) => hit.id)
      .sort();
  for (const [index, hit] of expected.entries()) {
    const got = actual[index] as { id: string; score: number };
    if (got.id === hit.id) continue;
    // Equal scores may come in another order, and a tie at the cut may keep another of the tied.
    const last = (expected.at(-1) as { score: number }).score;
    if (Math.abs(hit.score - last) < 1e-9) continue;
    assert.deepEqual(tied(actual, hit.score), tied(expected, hit.score), `${label}: ids at ${index}`);
  }
}

describe("bounded lexical top-k (SQLite)", () => {
  it("ranks exactly as FTS5's exhaustive pass while scoring only part of the matches", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    t.after(() => store.close());
    await fill(store, scope, corpus(7, 3000, vocabulary), ["Ana", "Bo"]);
    const db = new BetterSqlite3(join(dir, "cairn.db"), { readonly: true });
    t.after(() => db.close());
    const table = tenantStorage(scope.tenant).textTable;
    const scopeKey = db.prepare("SELECT DISTINCT scope_key FROM raw_nodes").pluck().get() as string;
    const oracle = { db, table, scopeKey };

    // Queries of one to three common words and one or two rarer ones, in mixed order.
    const queries: string[] = [];
    for (let index = 0; index < 40; index++) {
      const common = [0, 1, 2].slice(0, 1 + (index % 3)).map((offset) => vocabulary[(index + offset) % 6]);
      const rare = [vocabulary[20 + ((index * 7) % 300)], index % 2 ? vocabulary[60 + ((index * 13) % 300)] : null];
      queries.push([...rare, ...common].filter(Boolean).join(" "));
    }
    const check = (scopeToken: string | null, label: string) => {
      let bounded = 0;
      let scored = 0;
      let matched = 0;
      for (const limit of [10, 100]) {
        for (const query of queries) {
          const phrases = toPhrases(query);
          const trace: LexicalTrace = { strategy: "exhaustive", rounds: 0, scored: 0 };
          const pass = { db, table, scopeKey, scopeToken, filter: { sql: "", params: [] }, limit, boundedFromRows: 0 };
          const got = topLexical(pass, phrases, trace);
          const match = `${scopeToken ? `${scopeToken} AND ` : ""}(${phrases.join(" OR ")})`;
          assertSameRanking(got, exhaustive(oracle, match, limit), `${label} "${query}" top ${limit}`);
          if (trace.strategy === "bounded") {
            bounded++;
            scored += trace.scored;
            matched += db.prepare(`SELECT count(*) FROM ${table} WHERE ${table} MATCH ?`).pluck().get(match) as number;
          }
        }
      }
      // Not a timing: the pass must actually bound most of these queries, and rank fewer documents.
      assert.ok(bounded >= queries.length / 2, `${label}: ${bounded} of ${2 * queries.length} queries bounded`);
      assert.ok(scored < matched / 2, `${label}: scored ${scored} documents of ${matched} matches`);
    };
    check(null, "one scope");
    // The token FTS5 searches with when other scopes share the table: its score is part of every document's.
    check(scopeTokenOf(scopeKey), "scope token");
  });

  it("keeps the store's results, filters included, when another scope shares the table", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir });
    t.after(() => store.close());
    await fill(store, scope, corpus(11, 2400, vocabulary), ["Ana", "Bo", "Cy"]);
    await fill(store, otherScope, corpus(12, 800, vocabulary), ["Ana"]);
    const db = new BetterSqlite3(join(dir, "cairn.db"), { readonly: true });
    t.after(() => db.close());
    const table = tenantStorage(scope.tenant).textTable;
    const scoped = store.forScope(scope);
    const id = (await scoped.searchLexical("text", vocabulary[0] as string, { limit: 1 }))[0]?.id;
    const scopeKey = db.prepare("SELECT scope_key FROM raw_nodes WHERE id = ?").pluck().get(id) as string;
    const oracle = { db, table, scopeKey };
    let bounded = 0;
    for (const query of ["w0x w1x w2x wax wcx", "w3x w2x w4x wkx", "w1x w5x wzx w8x"]) {
      const match = `${scopeTokenOf(scopeKey)} AND (${toPhrases(query).join(" OR ")})`;
      assertSameRanking(await scoped.searchLexical("text", query, { limit: 50 }), exhaustive(oracle, match, 50), query);
      assertSameRanking(
        await scoped.searchLexical("text", query, { limit: 20, filters: { speakers: ["Cy"] } }),
        exhaustive(oracle, match, 20, "Cy"),
        `${query} (speaker Cy)`,
      );
      // The store ranks a table this small exhaustively; the bounded pass itself, under the same filter
      // (the clause the store's filterSql writes for speakers):
      const filter = { sql: "AND r.speaker IN (SELECT value FROM json_each(?))", params: [JSON.stringify(["Cy"])] };
      const trace: LexicalTrace = { strategy: "exhaustive", rounds: 0, scored: 0 };
      const pass = { db, table, scopeKey, scopeToken: scopeTokenOf(scopeKey), filter, limit: 20, boundedFromRows: 0 };
      assertSameRanking(
        topLexical(pass, toPhrases(query), trace),
        exhaustive(oracle, match, 20, "Cy"),
        `${query} (bounded, speaker Cy)`,
      );
      bounded += trace.strategy === "bounded" ? 1 : 0;
    }
    assert.ok(bounded > 0, "at least one filtered query went through the bounded pass");
  });
});
