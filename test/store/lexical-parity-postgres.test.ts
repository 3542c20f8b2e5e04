import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../../src/store/store.ts";
import { tempDir } from "../support/fixtures.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";
import { base, buildSessionWrite, hour, scopeA } from "./conformance-support.ts";

const skip = postgresSkipReason();

/** Text that the two stores' tokenizers cut differently before decision 037: inflections, stop words, accents, CJK. */
const sessions: readonly (readonly string[])[] = [
  [
    "The zebras were running across the plains at dawn",
    "I saw a zebra run past the café near the station",
    "who is it that keeps calling",
    "Ana's e-mail about the naïve résumé arrived on 2023-05-08",
  ],
  [
    "我昨天在东京买了一台新相机",
    "We walked the running track twice, then ran home",
    "Running shoes, running socks and a runner's watch",
    "The cafe on the corner serves the best coffee in town",
  ],
  [
    "It is what it is",
    "Generalisations about generals generally generate general disagreement",
    "The organisation organised an organic market",
    "Connected connections connecting connectivity",
  ],
];

const queries = [
  "zebras running",
  "who is it",
  "cafe resume",
  "相机",
  "东京 camera",
  "ana email",
  "2023",
  "ran runs runner",
  "generalization general",
  "organisations organic",
  "connect",
  "it is",
];

async function populate(store: Store): Promise<string[]> {
  const ids: string[] = [];
  for (const [index, texts] of sessions.entries()) {
    const written = await store.forScope(scopeA).commitSession(
      await buildSessionWrite({
        key: `s${index}`,
        timeMs: base + hour * index,
        turns: texts.map((text) => ({ speaker: "Ana", text })),
      }),
    );
    ids.push(...written.rawNodeIds);
  }
  return ids;
}

if (skip) {
  describe("lexical ranking on SQLite and Postgres", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();

  describe("lexical ranking on SQLite and Postgres", () => {
    it("the same text is cut into the same terms: every query finds the same turns in the same order on both stores", async (t) => {
      const sqlite = await SqliteStore.open({ path: join(tempDir(t), "store") });
      const postgres = await PostgresStore.open({ url: await cluster.freshDatabase() });
      try {
        const positions = async (store: Store) => {
          const ids = await populate(store);
          const position = new Map(ids.map((id, index) => [id, index]));
          const found: Record<string, number[]> = {};
          for (const query of queries) {
            const hits = await store.forScope(scopeA).searchLexical("text", query, { limit: 20 });
            found[query] = hits.map((hit) => position.get(hit.id) ?? -1);
          }
          return found;
        };
        const onSqlite = await positions(sqlite);
        const onPostgres = await positions(postgres);
        assert.deepEqual(onPostgres, onSqlite);
        // The cases the english configuration answered otherwise: stop words are terms, stems are Porter's.
        assert.deepEqual(onPostgres["who is it"]?.slice(0, 1), [2]);
        assert.ok((onPostgres["it is"] ?? []).includes(8), "a query of stop words finds the turn that says them");
        assert.deepEqual(onPostgres["cafe resume"]?.slice().sort(), [1, 3, 7], "accents removed, as FTS5 removes them");
      } finally {
        await sqlite.close();
        await postgres.close();
      }
    });
  });
}
