import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defaultAnnOptions, estimatedBytes } from "../../src/store/postgres/ann-indexes.ts";
import type { PostgresScopedStore } from "../../src/store/postgres/postgres-scoped-store.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { PostgresLexicalTrace } from "../../src/store/postgres/search-lexical.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";
import { embedText, scopeA, scopeB, textSpace } from "./conformance-support.ts";
import { forget } from "./scoped-reads.ts";
import { buildSessionWrite, spaces } from "./store-conformance.ts";

const skip = postgresSkipReason();

/** Each word's turn in its own words: the query "the <word> by the river" finds it first. */
const turnsOf = (words: readonly string[]) => words.map((word) => ({ text: `the ${word} by the river` }));
const words = ["heron", "otter", "ferry", "mill", "lantern", "harbour", "kettle", "orchard"];

describe("Postgres store: the in-process ANN index (decision 025)", { skip }, () => {
  if (skip) return;
  const cluster = usePostgresCluster();

  const inspect = cluster.inspect;

  it("a second instance's acknowledged write is found by the next search, a forget drops the index everywhere", async () => {
    const url = await cluster.freshDatabase();
    // Two Cairn instances on one database; above 4 vectors a scope is searched through the index.
    // Builds read 3 rows a statement: every build here takes several pages.
    const reader = await PostgresStore.open({ url, vectorSearch: { exactBelow: 4 }, vectorIndex: { buildPage: 3 } });
    const writer = await PostgresStore.open({ url, vectorSearch: { exactBelow: 4 } });
    try {
      const fromReader = reader.forScope(scopeA);
      const fromWriter = writer.forScope(scopeA);
      await fromWriter.commitSession(await buildSessionWrite({ key: "river", turns: turnsOf(words) }));
      await reader.vectorIndexReady(textSpace.name, scopeA);
      assert.equal(await reader.vectorIndexSize(textSpace.name, scopeA), 8);
      const nodes = await fromReader.readRawNodes({ sessionId: (await fromReader.readSessions({}))[0]?.id ?? "" });
      const heron = await fromReader.searchVectors(textSpace.name, await embedText("the heron by the river"), {
        limit: 3,
      });
      assert.equal(heron[0]?.id, nodes[0]?.id, "the nearest, through the index");
      assert.equal(heron.length, 3);

      // Acknowledged by the other instance, then searched here without waiting for anything.
      const quokkaWrite = await fromWriter.commitSession(
        await buildSessionWrite({ key: "quokka", turns: turnsOf(["quokka", "wombat"]) }),
      );
      const quokka = await embedText("the quokka by the river");
      const found = await fromReader.searchVectors(textSpace.name, quokka, { limit: 1 });
      assert.equal(found[0]?.id, quokkaWrite.rawNodeIds[0], "the other instance's write, caught up before the search");
      assert.equal(await reader.vectorIndexSize(textSpace.name, scopeA), 10, "caught up, not rebuilt");
      const filtered = await fromReader.searchVectors(textSpace.name, quokka, {
        limit: 3,
        filters: { sessionKeys: ["river"] },
      });
      assert.equal(filtered.length, 3, "filters apply to the index's candidates (or fall back to the exact scan)");
      assert.ok(filtered.every((hit) => nodes.some((node) => node.id === hit.id)));

      // Forgotten through the other instance: never returned here, and this index (holding it) is dropped.
      await forget(fromWriter, { session: "quokka" }, spaces);
      const after = await fromReader.searchVectors(textSpace.name, quokka, { limit: 10 });
      assert.ok(!after.some((hit) => quokkaWrite.rawNodeIds.includes(hit.id)), "no forgotten raw node comes back");
      assert.equal(after.length, 8, "the survivors, scanned exactly while the index is rebuilt");
      await reader.vectorIndexReady(textSpace.name, scopeA);
      assert.equal(await reader.vectorIndexSize(textSpace.name, scopeA), 8, "rebuilt without the forgotten vectors");
      const rebuilt = await fromReader.searchVectors(textSpace.name, quokka, { limit: 10 });
      assert.deepEqual(
        rebuilt.map((hit) => hit.id),
        after.map((hit) => hit.id),
        "the rebuilt index ranks as the exact scan did",
      );
    } finally {
      await reader.close();
      await writer.close();
    }
  });

  it("an unfiltered search of a built graph answers in one trip as the exact scan does, and names the lexical winners", async () => {
    const url = await cluster.freshDatabase();
    const store = await PostgresStore.open({ url, vectorSearch: { exactBelow: 4 } });
    const exact = await PostgresStore.open({ url, vectorSearch: { exactBelow: 1_000 } });
    try {
      const scoped = store.forScope(scopeA) as PostgresScopedStore;
      await scoped.commitSession(await buildSessionWrite({ key: "river", turns: turnsOf(words) }));
      const again = await scoped.commitSession(
        await buildSessionWrite({ key: "again", turns: turnsOf(words.slice(0, 3)) }),
      );
      const lexicalBefore: PostgresLexicalTrace = {};
      const before = await scoped.searchLexical("text", "heron river", { limit: 5 }, lexicalBefore);
      assert.equal(lexicalBefore.idsRead, before.length, "no graph yet: every winner's id is read");
      await store.vectorIndexReady(textSpace.name, scopeA);
      const answered = store.vectorIndexOneTripAnswers();
      for (const word of words) {
        const query = await embedText(`the ${word} by the river`);
        for (const limit of [1, 4, 11]) {
          const quick = await scoped.searchVectors(textSpace.name, query, { limit });
          const scanned = await exact.forScope(scopeA).searchVectors(textSpace.name, query, { limit });
          assert.deepEqual(
            quick.map((hit) => hit.id),
            scanned.map((hit) => hit.id),
            `${word} top ${limit}`,
          );
          quick.forEach((hit, rank) => {
            assert.ok(Math.abs(hit.score - (scanned[rank]?.score ?? Number.NaN)) < 1e-5, "the same cosine");
          });
        }
      }
      assert.equal(store.vectorIndexOneTripAnswers(), answered + words.length * 3, "every one through the graph");
      const filtered = await scoped.searchVectors(textSpace.name, await embedText("the heron by the river"), {
        limit: 2,
        filters: { sessionKeys: ["again"] },
      });
      assert.equal(filtered.length, 2);
      assert.equal(store.vectorIndexOneTripAnswers(), answered + words.length * 3, "a filtered search is not");

      const lexicalAfter: PostgresLexicalTrace = {};
      const after = await scoped.searchLexical("text", "heron river", { limit: 5 }, lexicalAfter);
      assert.deepEqual(after, before);
      assert.equal(lexicalAfter.idsRead, 0, "the graph knows every raw node's id");

      // Forgotten: the graph and what it knew go; neither pass names a forgotten raw node.
      await forget(scoped, { session: "again" }, spaces);
      const heron = await embedText("the heron by the river");
      const gone = await scoped.searchVectors(textSpace.name, heron, { limit: 11 });
      assert.equal(gone.length, 8);
      await store.vectorIndexReady(textSpace.name, scopeA);
      const oneTrip = store.vectorIndexOneTripAnswers();
      const rebuilt = await scoped.searchVectors(textSpace.name, heron, { limit: 8 });
      assert.equal(store.vectorIndexOneTripAnswers(), oneTrip + 1, "through the rebuilt graph");
      assert.deepEqual(
        rebuilt.map((hit) => hit.id),
        gone.map((hit) => hit.id),
      );
      const lexicalGone = await scoped.searchLexical("text", "heron river", { limit: 11 });
      for (const hits of [gone, rebuilt, lexicalGone]) {
        assert.ok(!hits.some((hit) => again.rawNodeIds.includes(hit.id)), "no forgotten raw node comes back");
      }
    } finally {
      await store.close();
      await exact.close();
    }
  });

  it("migration 10 numbers the vectors of an older store and drops its pgvector HNSW index", async () => {
    const url = await cluster.freshDatabase();
    const store = await PostgresStore.open({ url, vectorSearch: { exactBelow: 4 } });
    const written = await store
      .forScope(scopeA)
      .commitSession(await buildSessionWrite({ key: "river", turns: turnsOf(words) }));
    await store.close();
    // As a store of schema 9 held its vectors: no seq, an HNSW index, no vector generation.
    await inspect(url, async (client) => {
      const tables = (await client.query<{ table_name: string }>("SELECT table_name FROM vector_spaces")).rows;
      for (const { table_name: table } of tables) {
        await client.query(`ALTER TABLE ${table} DROP COLUMN seq`);
        await client.query(`CREATE INDEX ${table}_by_scope ON ${table} (scope_key)`);
        await client.query(`CREATE INDEX ${table}_hnsw ON ${table} USING hnsw (embedding vector_cosine_ops)`);
      }
      await client.query("ALTER TABLE index_state DROP COLUMN vector_generation");
      await client.query("DELETE FROM schema_migrations WHERE version = 10");
    });
    const migrated = await PostgresStore.open({ url, vectorSearch: { exactBelow: 4 } });
    try {
      await migrated.vectorIndexReady(textSpace.name, scopeA);
      assert.equal(
        await migrated.vectorIndexSize(textSpace.name, scopeA),
        8,
        "every stored vector numbered and indexed",
      );
      const hits = await migrated
        .forScope(scopeA)
        .searchVectors(textSpace.name, await embedText("the lantern by the river"), { limit: 1 });
      assert.equal(hits[0]?.id, written.rawNodeIds[4]);
      const indexes = await inspect(url, async (client) =>
        (
          await client.query<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE tablename ~ '^vec_[0-9]+$'")
        ).rows
          .map((row) => row.indexname)
          .sort(),
      );
      assert.ok(indexes.includes("vec_1_by_scope_seq"));
      assert.deepEqual(
        indexes.filter((name) => !name.endsWith("_by_scope_seq") && !name.endsWith("_pkey")),
        [],
        "no HNSW (or old scope) index left to maintain",
      );
    } finally {
      await migrated.close();
    }
  });

  it("past maxBytes the least recently searched scope's graph is dropped; its searches still answer and build it again", async () => {
    const url = await cluster.freshDatabase();
    // Room for one graph of 8 vectors, not two.
    const oneGraph = estimatedBytes(8, textSpace.dimensions, defaultAnnOptions.hnsw);
    const store = await PostgresStore.open({
      url,
      vectorSearch: { exactBelow: 4 },
      vectorIndex: { maxBytes: Math.floor(oneGraph * 1.5) },
    });
    try {
      for (const scope of [scopeA, scopeB]) {
        await store.forScope(scope).commitSession(await buildSessionWrite({ key: "river", turns: turnsOf(words) }));
      }
      const otter = await embedText("the otter by the river");
      await store.vectorIndexReady(textSpace.name, scopeA);
      assert.equal(await store.vectorIndexSize(textSpace.name, scopeA), 8);
      const throughGraph = await store.forScope(scopeA).searchVectors(textSpace.name, otter, { limit: 3 });

      await store.vectorIndexReady(textSpace.name, scopeB);
      assert.equal(await store.vectorIndexSize(textSpace.name, scopeB), 8, "the graph just built stays");
      assert.equal(await store.vectorIndexSize(textSpace.name, scopeA), 0, "the one searched least recently went");

      const exact = await store.forScope(scopeA).searchVectors(textSpace.name, otter, { limit: 3 });
      assert.deepEqual(
        exact.map((hit) => hit.id),
        throughGraph.map((hit) => hit.id),
        "an evicted scope is scanned exactly, with the same answer",
      );
      await store.vectorIndexReady(textSpace.name, scopeA);
      assert.equal(await store.vectorIndexSize(textSpace.name, scopeA), 8, "built again");
      assert.equal(await store.vectorIndexSize(textSpace.name, scopeB), 0, "and now the other one went");
    } finally {
      await store.close();
    }
  });
});
