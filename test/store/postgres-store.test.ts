import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type pg from "pg";
import { StoreError } from "../../src/core/errors.ts";
import { latestSchemaVersion } from "../../src/store/postgres/migrations.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";
import { embedText, images, scopeA, scopeB, scopeC, sha256, textSpace } from "./conformance-support.ts";
import { forget } from "./scoped-reads.ts";
import { buildSessionWrite, runStoreConformance, spaces } from "./store-conformance.ts";

const skip = postgresSkipReason();

if (skip) {
  describe("Store conformance: postgres", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();
  // Each case gets a fresh database, so cases stay independent.
  runStoreConformance("postgres", async () => PostgresStore.open({ url: await cluster.freshDatabase() }));

  /** A superuser's look under the store, which the seam does not show. */
  async function inspect<T>(url: string, read: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = cluster.admin(new URL(url).pathname.slice(1));
    await client.connect();
    try {
      return await read(client);
    } finally {
      await client.end();
    }
  }

  const count = async (client: pg.Client, sql: string) =>
    (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`)).rows[0]?.n ?? -1;

  describe("PostgresStore", () => {
    it("records applied schema versions once and does not re-run them on reopen", async () => {
      const url = await cluster.freshDatabase();
      await (await PostgresStore.open({ url, now: () => 1_000 })).close();
      await (await PostgresStore.open({ url, now: () => 2_000 })).close();
      const rows = await inspect(
        url,
        async (client) =>
          (
            await client.query<{ version: number; applied_ms: string }>(
              "SELECT version, applied_ms FROM schema_migrations",
            )
          ).rows,
      );
      assert.ok(rows.length >= 1);
      const versions = rows.map((row) => row.version).sort((x, y) => x - y);
      assert.equal(new Set(versions).size, versions.length, "each version once");
      assert.deepEqual(versions.slice(0, 5), [1, 2, 3, 4, 5], "the first five in order");
      assert.equal(rows.at(-1)?.version, latestSchemaVersion);
      assert.ok(
        rows.every((row) => Number(row.applied_ms) === 1_000),
        "applied on first open only",
      );
    });

    it("refuses with a StoreError to open a database whose schema is newer than the code, and leaves it alone", async () => {
      const url = await cluster.freshDatabase();
      const store = await PostgresStore.open({ url });
      await store.forScope(scopeA).commitSession(await buildSessionWrite({ key: "s", turns: [{ text: "kept" }] }));
      await store.close();
      await inspect(url, (client) =>
        client.query("INSERT INTO schema_migrations (version, name, applied_ms) VALUES (999, 'from the future', 0)"),
      );
      await assert.rejects(PostgresStore.open({ url }), (error) => {
        assert.ok(error instanceof StoreError, `expected StoreError, got ${error}`);
        assert.equal(error.operation, "open");
        assert.match(error.message, /999/);
        return true;
      });
      assert.equal(await inspect(url, (client) => count(client, "sessions")), 1, "the data is untouched");
    });

    it("stores an image once per tenant, never shared across tenants, and deletes its bytes with the tenant's last use", async () => {
      const url = await cluster.freshDatabase();
      const store = await PostgresStore.open({ url });
      try {
        const { red } = await images();
        const write = (key: string) => buildSessionWrite({ key, turns: [{ text: key, images: [{ data: red }] }] });
        // scopeA and scopeB are one tenant (acme), scopeC another (globex).
        await store.forScope(scopeA).commitSession(await write("a"));
        await store.forScope(scopeB).commitSession(await write("b"));
        await store.forScope(scopeC).commitSession(await write("c"));
        const copies = () =>
          inspect(url, async (client) =>
            (
              await client.query<{ tenant: string }>("SELECT tenant FROM blobs WHERE hash = $1 ORDER BY tenant", [
                sha256(red),
              ])
            ).rows.map((row) => row.tenant),
          );
        assert.deepEqual(await copies(), ["acme", "globex"]);
        const first = await forget(store.forScope(scopeA), { all: true }, spaces);
        assert.equal(first.blobsDeleted, 1, "scope A no longer sees the image");
        assert.deepEqual(await copies(), ["acme", "globex"], "scope B of the same tenant still uses acme's copy");
        await forget(store.forScope(scopeB), { all: true }, spaces);
        assert.deepEqual(await copies(), ["globex"], "the tenant's last use gone, its bytes go");
      } finally {
        await store.close();
      }
    });

    it("forget all leaves no row of the scopes behind in any table", async () => {
      const url = await cluster.freshDatabase();
      const store = await PostgresStore.open({ url });
      const { red, blue } = await images();
      try {
        for (const target of [scopeA, scopeC]) {
          await store.forScope(target).commitSession(
            await buildSessionWrite({
              key: "s",
              turns: [
                { text: "one", images: [{ data: red, caption: "red" }] },
                { text: "two", images: [{ data: blue }, { data: red }] },
              ],
            }),
          );
          await forget(store.forScope(target), { all: true }, spaces);
        }
      } finally {
        await store.close();
      }
      const counts = await inspect(url, async (client) => {
        const vectorTables = (await client.query<{ table_name: string }>("SELECT table_name FROM vector_spaces")).rows;
        const tables = [
          "sessions",
          "raw_nodes",
          "raw_node_images",
          "blobs",
          "blob_vectors",
          "lexical_docs",
          "lexical_postings",
          "lexical_terms",
          "index_entries",
          "index_pointers",
          ...vectorTables.map((row) => row.table_name),
        ];
        return Object.fromEntries(await Promise.all(tables.map(async (table) => [table, await count(client, table)])));
      });
      assert.ok(Object.keys(counts).some((table) => table.startsWith("vec_")));
      assert.deepEqual(counts, Object.fromEntries(Object.keys(counts).map((table) => [table, 0])));
    });

    it("BM25 statistics are the tenant's own: another tenant's documents move no score; they equal a recount after commits and forgets", async () => {
      const url = await cluster.freshDatabase();
      const store = await PostgresStore.open({ url });
      try {
        const a = store.forScope(scopeA);
        const sameTenant = store.forScope(scopeB);
        const otherTenant = store.forScope(scopeC);
        const turns = (texts: readonly string[]) => texts.map((text) => ({ text }));
        await a.commitSession(
          await buildSessionWrite({
            key: "a",
            turns: turns(["the quokka smiled", "quokka quokka on the island", "ferry to the island"]),
          }),
        );
        const scores = async () =>
          (await a.searchLexical("text", "quokka island", { limit: 10 })).map((hit) => hit.score);
        const before = await scores();
        assert.equal(before.length, 3);
        const crowd = await otherTenant.commitSession(
          await buildSessionWrite({
            key: "crowd",
            turns: turns(Array.from({ length: 40 }, (_, index) => `quokka ${index} island quokka crowd`)),
          }),
        );
        assert.deepEqual(await scores(), before, "another tenant's documents change no score");
        await sameTenant.commitSession(
          await buildSessionWrite({ key: "b", turns: turns(["a quokka", "no match here", "nor here at all"]) }),
        );
        assert.notDeepEqual(await scores(), before, "the same tenant's documents are its statistics");
        await forget(otherTenant, { rawNode: crowd.rawNodeIds[0] as string }, spaces);
        await forget(sameTenant, { session: "b" }, spaces);
        assert.deepEqual(await scores(), before, "forgetting takes a document out of the statistics");

        const recount = await inspect(url, async (client) => {
          const kept = await client.query(
            `SELECT tenant, field, lexeme, df FROM lexical_terms
             EXCEPT SELECT tenant, field, lexeme, count(*)::int FROM lexical_postings GROUP BY 1, 2, 3`,
          );
          const missing = await client.query(
            `SELECT tenant, field, lexeme, count(*)::int FROM lexical_postings GROUP BY 1, 2, 3
             EXCEPT SELECT tenant, field, lexeme, df FROM lexical_terms`,
          );
          const totals = await client.query(
            `SELECT s.tenant, s.field, s.docs, s.total_length, d.docs AS counted, d.total_length AS summed
             FROM lexical_stats s LEFT JOIN (SELECT tenant, field, count(*) AS docs, sum(length) AS total_length
                                             FROM lexical_docs GROUP BY 1, 2) d USING (tenant, field)
             WHERE s.docs <> coalesce(d.docs, 0) OR s.total_length <> coalesce(d.total_length, 0)`,
          );
          return { kept: kept.rows, missing: missing.rows, totals: totals.rows };
        });
        assert.deepEqual(recount, { kept: [], missing: [], totals: [] }, "maintained statistics equal a recount");
      } finally {
        await store.close();
      }
    });

    it("lists the scopes that hold data, across tenants, for administration", async () => {
      const url = await cluster.freshDatabase();
      const store = await PostgresStore.open({ url });
      try {
        for (const target of [scopeC, scopeA, scopeB]) {
          await store.forScope(target).commitSession(await buildSessionWrite({ key: "s", turns: [{ text: "x" }] }));
        }
        await forget(store.forScope(scopeB), { all: true }, spaces);
        assert.deepEqual(await store.listScopes(), [scopeA, scopeC]);
      } finally {
        await store.close();
      }
    });

    it("a scope once counted large and then shrunk by a forget still finds all it holds (exact fallback)", async () => {
      const url = await cluster.freshDatabase();
      // Above 4 vectors a scope goes through HNSW; the verdict is kept a while instead of counted per search.
      const store = await PostgresStore.open({ url, vectorSearch: { exactBelow: 4 } });
      try {
        const a = store.forScope(scopeA);
        const words = ["heron", "otter", "ferry", "mill", "lantern", "harbour", "kettle", "orchard"];
        const turns = words.map((word) => ({ text: `the ${word} by the river` }));
        await a.commitSession(await buildSessionWrite({ key: "many", turns }));
        const query = await embedText("the heron by the river");
        assert.equal((await a.searchVectors(textSpace.name, query, { limit: 5 })).length, 5);
        const nodes = await a.readRawNodes({ sessionId: (await a.readSessions({}))[0]?.id ?? "" });
        for (const node of nodes.slice(2)) await forget(a, { rawNode: node.id }, spaces);
        const left = await a.searchVectors(textSpace.name, query, { limit: 5 });
        assert.deepEqual(
          left.map((hit) => hit.id).sort(),
          nodes
            .slice(0, 2)
            .map((node) => node.id)
            .sort(),
          "both survivors, though the scope was last counted above exactBelow",
        );
      } finally {
        await store.close();
      }
    });
  });
}
