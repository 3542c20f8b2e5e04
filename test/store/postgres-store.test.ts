import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type pg from "pg";
import { StoreError } from "../../src/core/errors.ts";
import { contextualTexts, defaultIndexTextConfig, imagesText } from "../../src/store/index-text.ts";
import { lexicalDocument } from "../../src/store/lexical-text.ts";
import { blockTriggerFunctions, fixedBlockFunctions } from "../../src/store/postgres/lexical-blocks.ts";
import {
  addStatisticsBefore11,
  insertDocumentsBefore11,
  removeStatisticsBefore11,
} from "../../src/store/postgres/lexical-documents-before-11.ts";
import { latestSchemaVersion, rowPostingsTrigger } from "../../src/store/postgres/migrations.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { appRole, postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";
import { blockPostings, blocksOutOfShape, postingsOutOfStep } from "../support/postgres-lexical-blocks.ts";
import {
  base,
  embedText,
  images,
  scopeA,
  scopeB,
  scopeC,
  sha256,
  type TurnSpec,
  textSpace,
} from "./conformance-support.ts";
import { forget } from "./scoped-reads.ts";
import { buildSessionWrite, runStoreConformance, spaces } from "./store-conformance.ts";

const skip = postgresSkipReason();

/**
 * Puts a database's lexical postings back in their shape before migration 12 (one row per posting,
 * migration 11's row trigger), their rows kept, and migration 14 unapplied (it builds on 12's
 * blocks). Run as a superuser: the tables go back to the app role.
 */
const lexicalTablesBefore12 = `
  CREATE TABLE lexical_postings (
    scope_key text COLLATE "C" NOT NULL, field text COLLATE "C" NOT NULL, lexeme text COLLATE "C" NOT NULL,
    raw_node_rowid bigint NOT NULL, tenant text NOT NULL, tf integer NOT NULL, length integer NOT NULL,
    PRIMARY KEY (scope_key, field, lexeme, raw_node_rowid) INCLUDE (tf, length, tenant));
  ALTER TABLE lexical_postings OWNER TO ${appRole};
  ALTER TABLE lexical_postings ENABLE ROW LEVEL SECURITY;
  ALTER TABLE lexical_postings FORCE ROW LEVEL SECURITY;
  CREATE POLICY tenant_wall ON lexical_postings
    USING (tenant = current_setting('cairn.tenant', true)) WITH CHECK (tenant = current_setting('cairn.tenant', true));
  INSERT INTO lexical_postings SELECT b.scope_key, b.field, b.lexeme, x.rowid, b.tenant, x.tf, x.length
    FROM lexical_blocks b, lexical_block_postings(b.postings) x;
  DROP TRIGGER lexical_docs_add_postings ON lexical_docs;
  DROP TRIGGER lexical_docs_drop_postings ON lexical_docs;
  DROP FUNCTION lexical_docs_add_postings();
  DROP FUNCTION lexical_docs_drop_postings();
  DROP TABLE lexical_blocks;
  DROP FUNCTION lexical_block_postings(bytea);
  DROP FUNCTION lexical_posting(bigint, bigint, integer, integer);
  DROP FUNCTION lexical_varint(bigint);
  DROP FUNCTION lexical_varint_long(bigint);
  DELETE FROM schema_migrations WHERE version = 14;
  ${rowPostingsTrigger}
  ALTER FUNCTION lexical_docs_drop_postings() OWNER TO ${appRole};`;

/**
 * Puts a database's lexical blocks back in their shape before migration 14 (each posting as 16
 * bytes, migration 12's functions and triggers), their rows kept. Run as a superuser.
 */
const lexicalBlocksBefore14 = `
  ALTER FUNCTION lexical_block_postings(bytea) RENAME TO varint_postings;
  ${fixedBlockFunctions}
  UPDATE lexical_blocks b SET postings = (
    SELECT string_agg(lexical_posting(x.rowid, x.tf, x.length), ''::bytea ORDER BY x.rowid) FROM varint_postings(b.postings) x);
  DROP FUNCTION varint_postings(bytea);
  DROP FUNCTION lexical_posting(bigint, bigint, integer, integer);
  DROP FUNCTION lexical_varint(bigint);
  DROP FUNCTION lexical_varint_long(bigint);
  ${blockTriggerFunctions("fixed")}
  ALTER FUNCTION lexical_posting(bigint, integer, integer) OWNER TO ${appRole};
  ALTER FUNCTION lexical_block_postings(bytea) OWNER TO ${appRole};
  DELETE FROM schema_migrations WHERE version = 14;`;

/** Puts a database's lexical tables back in their shape before migration 11 (their rows kept, documents without terms). */
const lexicalTablesBefore11 = `
  ${lexicalTablesBefore12}
  DROP TRIGGER lexical_docs_drop_postings ON lexical_docs;
  DROP FUNCTION lexical_docs_drop_postings();
  ALTER TABLE lexical_docs DROP COLUMN terms, DROP COLUMN tfs;
  ALTER TABLE lexical_postings ADD CONSTRAINT lexical_postings_raw_node_rowid_fkey
    FOREIGN KEY (raw_node_rowid) REFERENCES raw_nodes (rowid) ON DELETE CASCADE,
    ALTER COLUMN scope_key TYPE text COLLATE "default", ALTER COLUMN field TYPE text COLLATE "default",
    ALTER COLUMN lexeme TYPE text COLLATE "default";
  ALTER TABLE lexical_terms ALTER COLUMN field TYPE text COLLATE "default",
    ALTER COLUMN lexeme TYPE text COLLATE "default";
  CREATE INDEX lexical_postings_by_node ON lexical_postings (raw_node_rowid);`;

/**
 * Turns with the index text a write through the SDK gives them (the default settings: speaker, date,
 * images, neighbours): what migration 13 makes again from the stored raw nodes.
 */
function withIndexText(turns: readonly TurnSpec[]): TurnSpec[] {
  const texts = contextualTexts(
    turns.map((turn) => ({
      speaker: turn.speaker ?? null,
      text: turn.text,
      imageText: imagesText(
        (turn.images ?? []).map((image) => ({
          caption: image.caption ?? null,
          derivedText: image.derivedText ?? null,
        })),
      ),
      timeMs: turn.timeMs ?? base,
    })),
    defaultIndexTextConfig,
  );
  return turns.map((turn, index) => ({ ...turn, indexText: texts[index] ?? "" }));
}

if (skip) {
  describe("Store conformance: postgres", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();
  // Each case gets a fresh database, so cases stay independent.
  runStoreConformance("postgres", async () => PostgresStore.open({ url: await cluster.freshDatabase() }));

  const inspect = cluster.inspect;

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
      assert.deepEqual(
        versions,
        versions.map((_, index) => index + 1),
        "versions 1..N, each once",
      );
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
          "lexical_blocks",
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
             EXCEPT SELECT tenant, field, lexeme, count(*)::int FROM ${blockPostings} GROUP BY 1, 2, 3`,
          );
          const missing = await client.query(
            `SELECT tenant, field, lexeme, count(*)::int FROM ${blockPostings} GROUP BY 1, 2, 3
             EXCEPT SELECT tenant, field, lexeme, df FROM lexical_terms`,
          );
          const totals = await client.query(
            `SELECT s.tenant, s.field, s.docs, s.total_length, d.docs AS counted, d.total_length AS summed
             FROM lexical_stats s LEFT JOIN (SELECT tenant, field, count(*) AS docs, sum(length) AS total_length
                                             FROM lexical_docs GROUP BY 1, 2) d USING (tenant, field)
             WHERE s.docs <> coalesce(d.docs, 0) OR s.total_length <> coalesce(d.total_length, 0)`,
          );
          const postings = await client.query(postingsOutOfStep);
          const blocks = await client.query(blocksOutOfShape);
          return {
            kept: kept.rows,
            missing: missing.rows,
            totals: totals.rows,
            postings: postings.rows,
            blocks: blocks.rows,
          };
        });
        assert.deepEqual(
          recount,
          { kept: [], missing: [], totals: [], postings: [], blocks: [] },
          "maintained statistics equal a recount; postings are their documents' terms",
        );
      } finally {
        await store.close();
      }
    });

    it("migration 6 indexes stored Chinese and Japanese documents again as bigrams; statistics equal a recount", async () => {
      const url = await cluster.freshDatabase();
      const store = await PostgresStore.open({ url });
      const a = store.forScope(scopeA);
      const c = store.forScope(scopeC);
      const { red } = await images();
      // Written as the SDK writes (contextual index text), so migration 13, which makes every document
      // again from its raw node, gives back the documents the store held before.
      const written = await a.commitSession(
        await buildSessionWrite({
          key: "s",
          turns: withIndexText([
            { text: "我昨天在东京买了一台新相机" },
            { text: "the quokka smiled on the island" },
            { text: "a photo", images: [{ data: red, caption: "夕焼けの海" }] },
          ]),
        }),
      );
      await c.commitSession(
        await buildSessionWrite({ key: "s", turns: withIndexText([{ text: "週末は京都で抹茶を飲みました" }]) }),
      );
      const english = await a.searchLexical("text", "quokka island", { limit: 10 });
      // As a store before migration 6 held them: each document's raw text as one parse, the lexical
      // tables in their shape before migration 11, and versions 6 to 13 unapplied.
      await inspect(url, async (client) => {
        const sql = {
          query: async (text: string, values?: readonly unknown[]) =>
            (await client.query(text, values as unknown[])).rows,
        };
        await client.query(lexicalTablesBefore11);
        for (const tenant of ["acme", "globex"]) {
          const rows = await sql.query(
            `SELECT d.raw_node_rowid AS rowid, d.field, d.scope_key,
               CASE WHEN d.field = 'text' THEN r.text ELSE (SELECT string_agg(caption, ' ') FROM raw_node_images i WHERE i.raw_node_rowid = r.rowid) END AS body
             FROM lexical_docs d JOIN raw_nodes r ON r.rowid = d.raw_node_rowid WHERE d.tenant = $1`,
            [tenant],
          );
          const rowids = rows.map((row) => row.rowid as number);
          await removeStatisticsBefore11(tenant, sql, rowids);
          await sql.query("DELETE FROM lexical_postings WHERE raw_node_rowid = ANY($1::bigint[])", [rowids]);
          await sql.query("DELETE FROM lexical_docs WHERE raw_node_rowid = ANY($1::bigint[])", [rowids]);
          await insertDocumentsBefore11(
            sql,
            { tenant, key: rows[0]?.scope_key as string },
            { rowids, fields: rows.map((row) => row.field), bodies: rows.map((row) => row.body) },
          );
          await addStatisticsBefore11(tenant, sql, [...new Set(rowids)]);
        }
        await client.query("DELETE FROM schema_migrations WHERE version IN (6, 11, 12, 13)");
      });
      // This Cairn cannot search the old shape (its postings are rows, not blocks): the rows show it.
      assert.equal(
        await inspect(url, (client) => count(client, "lexical_postings WHERE lexeme = '相机'")),
        0,
        "the old index misses a word in a run",
      );
      await store.close();

      const migrated = await PostgresStore.open({ url });
      try {
        const [camera, , photo] = written.rawNodeIds;
        const found = async (scoped: typeof a, field: "text" | "imageText", query: string) =>
          (await scoped.searchLexical(field, query, { limit: 10 })).map((hit) => hit.id);
        assert.deepEqual(await found(migrated.forScope(scopeA), "text", "相机"), [camera]);
        assert.deepEqual(await found(migrated.forScope(scopeA), "imageText", "夕焼け"), [photo]);
        assert.equal((await found(migrated.forScope(scopeC), "text", "抹茶")).length, 1, "every tenant is migrated");
        assert.deepEqual(
          await migrated.forScope(scopeA).searchLexical("text", "quokka island", { limit: 10 }),
          english,
          "English documents score as before",
        );
        const mismatches = await inspect(url, async (client) => {
          const terms = await client.query(
            `(SELECT tenant, field, lexeme, df FROM lexical_terms
              EXCEPT SELECT tenant, field, lexeme, count(*)::int FROM ${blockPostings} GROUP BY 1, 2, 3)
             UNION ALL (SELECT tenant, field, lexeme, count(*)::int FROM ${blockPostings} GROUP BY 1, 2, 3
              EXCEPT SELECT tenant, field, lexeme, df FROM lexical_terms)`,
          );
          const totals = await client.query(
            `SELECT s.tenant FROM lexical_stats s LEFT JOIN (SELECT tenant, field, count(*) AS docs, sum(length) AS total_length
               FROM lexical_docs GROUP BY 1, 2) d USING (tenant, field)
             WHERE s.docs <> coalesce(d.docs, 0) OR s.total_length <> coalesce(d.total_length, 0)`,
          );
          return [...terms.rows, ...totals.rows];
        });
        assert.deepEqual(mismatches, [], "maintained statistics equal a recount");
      } finally {
        await migrated.close();
      }
    });

    it("migrations 11 and 12 put each stored document's terms on its row and its postings in blocks; BM25 scores as before; a forget removes its postings", async () => {
      const url = await cluster.freshDatabase();
      const store = await PostgresStore.open({ url });
      const a = store.forScope(scopeA);
      const { red } = await images();
      const turns = (texts: readonly string[]) => texts.map((text) => ({ text }));
      await a.commitSession(
        await buildSessionWrite({
          key: "kept",
          turns: [
            ...turns(["the quokka smiled", "quokka quokka on the island", "ferry to the island"]),
            { text: "a photo", images: [{ data: red, caption: "a quokka on a red island" }] },
          ],
        }),
      );
      await a.commitSession(
        await buildSessionWrite({ key: "gone", turns: turns(["island quokka island", "nothing to see"]) }),
      );
      await store
        .forScope(scopeC)
        .commitSession(await buildSessionWrite({ key: "s", turns: turns(["another tenant's quokka island"]) }));
      const search = async (scoped: typeof a) => ({
        text: await scoped.searchLexical("text", "quokka island", { limit: 10 }),
        image: await scoped.searchLexical("imageText", "red quokka", { limit: 10 }),
        other: await scoped.searchLexical("text", "ferry", { limit: 10 }),
      });
      const before = await search(a);
      assert.equal(before.text.length, 4);
      await store.close();
      await inspect(url, async (client) => {
        await client.query(lexicalTablesBefore11);
        await client.query("DELETE FROM schema_migrations WHERE version IN (11, 12)");
      });

      const migrated = await PostgresStore.open({ url });
      try {
        const scoped = migrated.forScope(scopeA);
        assert.deepEqual(await search(scoped), before, "every score and order as before the migration");
        const shape = await inspect(url, async (client) => ({
          outOfStep: (await client.query(postingsOutOfStep)).rows,
          withoutTerms: await count(client, "lexical_docs WHERE cardinality(terms) = 0 AND length > 0"),
          blocks: (await client.query(blocksOutOfShape)).rows,
          postingsTable: await count(client, "pg_class WHERE relname = 'lexical_postings'"),
          byteKeys: await count(
            client,
            `information_schema.columns WHERE collation_name = 'C' AND (table_name, column_name) IN
               (('lexical_blocks', 'scope_key'), ('lexical_blocks', 'field'), ('lexical_blocks', 'lexeme'),
                ('lexical_terms', 'field'), ('lexical_terms', 'lexeme'), ('lexical_docs', 'terms'))`,
          ),
        }));
        assert.deepEqual(shape, { outOfStep: [], withoutTerms: 0, blocks: [], postingsTable: 0, byteKeys: 6 });
        await forget(scoped, { session: "gone" }, spaces);
        const left = await inspect(url, async (client) => ({
          // The forgotten raw nodes are gone: a posting of theirs would name no raw node.
          postings: await count(client, `${blockPostings} WHERE raw_node_rowid NOT IN (SELECT rowid FROM raw_nodes)`),
          outOfStep: (await client.query(postingsOutOfStep)).rows,
          blocks: (await client.query(blocksOutOfShape)).rows,
        }));
        assert.deepEqual(
          left,
          { postings: 0, outOfStep: [], blocks: [] },
          "the forgotten documents' postings went with them",
        );
        assert.equal((await scoped.searchLexical("text", "quokka island", { limit: 10 })).length, 3);
      } finally {
        await migrated.close();
      }
    });

    it("migration 13 cuts every stored document again as FTS5 does: BM25 ranks as in a store written now", async () => {
      const url = await cluster.freshDatabase();
      const store = await PostgresStore.open({ url });
      const a = store.forScope(scopeA);
      const { red } = await images();
      const turnsA = withIndexText([
        { speaker: "Ana", text: "The zebras were running across the plains" },
        { speaker: "Ben", text: "I saw a zebra run past the café" },
        { speaker: "Ana", text: "who is it", images: [{ data: red, caption: "a striped animal by a red wall" }] },
      ]);
      const turnsC = withIndexText([{ text: "zebras of another tenant" }]);
      const [zebras, cafe, who] = (await a.commitSession(await buildSessionWrite({ key: "s", turns: turnsA })))
        .rawNodeIds;
      await store.forScope(scopeC).commitSession(await buildSessionWrite({ key: "s", turns: turnsC }));
      const search = async (scoped: typeof a) => ({
        zebras: await scoped.searchLexical("text", "zebras running", { limit: 10 }),
        // Only stop words: the query keeps them all (`queryTerms`), and FTS5's documents hold them.
        stopWords: await scoped.searchLexical("text", "who is it", { limit: 10 }),
        cafe: await scoped.searchLexical("text", "cafe", { limit: 10 }),
        image: await scoped.searchLexical("imageText", "striped wall", { limit: 10 }),
      });
      const before = await search(a);
      const ids = (hits: readonly { id: string }[]) => hits.map((hit) => hit.id);
      assert.deepEqual(ids(before.zebras).slice(0, 2), [zebras, cafe], "zebras → zebra, running → run");
      assert.deepEqual(ids(before.stopWords), [who], "a query of stop words finds the turn that says them");
      assert.equal(before.cafe[0]?.id, cafe, "café found without its accent");
      assert.deepEqual(ids(before.image), [who]);
      await store.close();

      // As a store before migration 13 held them: each document cut by the english configuration
      // (stop words dropped, Snowball stems), its statistics counted from those terms.
      const bodies = new Map<string, string>();
      for (const turn of [...turnsA, ...turnsC]) {
        bodies.set(`text:${turn.text}`, lexicalDocument(turn.indexText ?? turn.text));
        for (const image of turn.images ?? [])
          bodies.set(`imageText:${turn.text}`, lexicalDocument(image.caption ?? ""));
      }
      const englishTerms = await inspect(url, async (client) => {
        const documents = (
          await client.query<{ rowid: string; field: string; text: string }>(
            "SELECT d.raw_node_rowid AS rowid, d.field, r.text FROM lexical_docs d JOIN raw_nodes r ON r.rowid = d.raw_node_rowid",
          )
        ).rows;
        await client.query("DELETE FROM lexical_docs");
        await client.query("DELETE FROM lexical_terms");
        await client.query("DELETE FROM lexical_stats");
        await client.query(
          `INSERT INTO lexical_docs (raw_node_rowid, field, tenant, scope_key, length, terms, tfs)
           SELECT r.rowid, x.field, r.tenant, r.scope_key, coalesce(a.length, 0), coalesce(a.terms, '{}'), coalesce(a.tfs, '{}')
           FROM unnest($1::bigint[], $2::text[], $3::text[]) AS x (rowid, field, body)
           JOIN raw_nodes r ON r.rowid = x.rowid
           CROSS JOIN LATERAL (
             SELECT array_agg(u.lexeme) AS terms, array_agg(array_length(u.positions, 1)) AS tfs,
               sum(array_length(u.positions, 1))::int AS length
             FROM unnest(to_tsvector('english', x.body)) u
           ) a`,
          [
            documents.map((document) => document.rowid),
            documents.map((document) => document.field),
            documents.map((document) => bodies.get(`${document.field}:${document.text}`) ?? assert.fail(document.text)),
          ],
        );
        await client.query(
          `INSERT INTO lexical_terms (tenant, field, lexeme, df)
           SELECT d.tenant, d.field, u.lexeme, count(*) FROM lexical_docs d, unnest(d.terms) AS u (lexeme) GROUP BY 1, 2, 3`,
        );
        await client.query(
          `INSERT INTO lexical_stats (tenant, field, docs, total_length)
           SELECT tenant, field, count(*), sum(length) FROM lexical_docs GROUP BY 1, 2`,
        );
        return count(client, "lexical_docs WHERE 'the' = ANY(terms) OR 'zebras' = ANY(terms)");
      });
      assert.equal(englishTerms, 0, "the english configuration held neither stop words nor FTS5's stems");
      await inspect(url, (client) => client.query("DELETE FROM schema_migrations WHERE version = 13"));

      const migrated = await PostgresStore.open({ url });
      try {
        assert.deepEqual(await search(migrated.forScope(scopeA)), before, "every id, score and order as written now");
        assert.equal(
          (await migrated.forScope(scopeC).searchLexical("text", "zebras", { limit: 10 })).length,
          1,
          "every tenant is migrated",
        );
        const shape = await inspect(url, async (client) => ({
          outOfStep: (await client.query(postingsOutOfStep)).rows,
          blocks: (await client.query(blocksOutOfShape)).rows,
          stopWords: await count(client, "lexical_docs WHERE 'the' = ANY(terms)"),
        }));
        assert.deepEqual(shape, { outOfStep: [], blocks: [], stopWords: 2 });
        assert.deepEqual(await migrated.verifyLexical("acme"), []);
        assert.deepEqual(await migrated.verifyLexical("globex"), []);
      } finally {
        await migrated.close();
      }
    });

    it("migration 14 writes every block's postings again as varints: the same postings, under a third of the bytes, BM25 as before", async () => {
      const url = await cluster.freshDatabase();
      const store = await PostgresStore.open({ url });
      const a = store.forScope(scopeA);
      const { red } = await images();
      // Enough postings that the common terms fill several blocks, the rowids far apart in another tenant's.
      for (let session = 0; session < 6; session++) {
        const turns = Array.from({ length: 50 }, (_, turn) => ({
          text: `the ferry to the island ${turn % 7 === 0 ? "quokka" : "harbour"} number ${session * 50 + turn}`,
        }));
        await a.commitSession(
          await buildSessionWrite({
            key: `s${session}`,
            turns: [
              ...turns,
              { text: "a photo", images: [{ data: red, caption: `a quokka on a red island ${session}` }] },
            ],
          }),
        );
        await store
          .forScope(scopeC)
          .commitSession(
            await buildSessionWrite({ key: `c${session}`, turns: [{ text: `quokka island ${session}` }] }),
          );
      }
      const search = async (scoped: typeof a) => ({
        text: await scoped.searchLexical("text", "quokka island ferry", { limit: 20 }),
        image: await scoped.searchLexical("imageText", "red quokka", { limit: 10 }),
        number: await scoped.searchLexical("text", "number 123", { limit: 5 }),
      });
      const before = await search(a);
      assert.equal(before.text.length, 20);
      await store.close();
      const held = (client: pg.Client) =>
        client.query(`SELECT * FROM ${blockPostings} ORDER BY tenant, scope_key, field, lexeme, raw_node_rowid`);
      const bytes = async (client: pg.Client) =>
        Number((await client.query("SELECT sum(length(postings)) AS n FROM lexical_blocks")).rows[0]?.n);
      const fixed = await inspect(url, async (client) => {
        await client.query(lexicalBlocksBefore14);
        return { postings: (await held(client)).rows, bytes: await bytes(client) };
      });
      assert.equal(fixed.bytes, 16 * fixed.postings.length, "migration 12's blocks: 16 bytes a posting");

      const migrated = await PostgresStore.open({ url });
      try {
        const after = await inspect(url, async (client) => ({
          postings: (await held(client)).rows,
          bytes: await bytes(client),
          blocks: (await client.query(blocksOutOfShape)).rows,
          outOfStep: (await client.query(postingsOutOfStep)).rows,
          fixedDecoder: await count(client, "pg_proc WHERE proname = 'lexical_block_postings_fixed'"),
        }));
        assert.deepEqual(after.postings, fixed.postings, "every block holds the postings it held");
        assert.ok(after.bytes * 3 < fixed.bytes, `${after.bytes} bytes of varints against ${fixed.bytes}`);
        assert.deepEqual([after.blocks, after.outOfStep, after.fixedDecoder], [[], [], 0]);
        const scoped = migrated.forScope(scopeA);
        assert.deepEqual(await search(scoped), before, "every id, score and order as before the migration");
        // The triggers write varints from now on: a commit appends to the lists' last blocks, a forget rewrites them.
        await scoped.commitSession(
          await buildSessionWrite({ key: "late", turns: [{ text: "quokka quokka ferry at the island" }] }),
        );
        await forget(scoped, { session: "s2" }, spaces);
        const written = await inspect(url, async (client) => ({
          blocks: (await client.query(blocksOutOfShape)).rows,
          outOfStep: (await client.query(postingsOutOfStep)).rows,
        }));
        assert.deepEqual(written, { blocks: [], outOfStep: [] });
        assert.deepEqual(await migrated.verifyLexical("acme"), []);
        const text = await scoped.searchLexical("text", "quokka island ferry", { limit: 20 });
        assert.equal(text.length, 20);
      } finally {
        await migrated.close();
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

    it("a small scope ranks exactly, and once it grows past exactBelow the same search finds the same nearest", async () => {
      const url = await cluster.freshDatabase();
      const store = await PostgresStore.open({ url, vectorSearch: { exactBelow: 4 } });
      try {
        const a = store.forScope(scopeA);
        const words = ["heron", "otter", "ferry", "mill", "lantern", "harbour", "kettle", "orchard"];
        const turns = words.map((word) => ({ text: `the ${word} by the river` }));
        const query = await embedText("the heron by the river");
        await a.commitSession(await buildSessionWrite({ key: "few", turns: turns.slice(0, 3) }));
        const few = await a.searchVectors(textSpace.name, query, { limit: 2 });
        const [heron] = await a.readRawNodes({ sessionId: (await a.readSessions({}))[0]?.id ?? "" });
        assert.equal(few.length, 2, "a small scope gives as many hits as asked");
        assert.equal(few[0]?.id, heron?.id, "the exact nearest first");
        assert.ok((few[0]?.score ?? 0) >= (few[1]?.score ?? 0));
        await a.commitSession(await buildSessionWrite({ key: "more", turns: turns.slice(3) }));
        const many = await a.searchVectors(textSpace.name, query, { limit: 8 });
        assert.equal(many.length, 8, "every vector of the grown scope, through the index");
        assert.equal(many[0]?.id, heron?.id);
        // Filters take the counted path: the same nearest.
        const filtered = await a.searchVectors(textSpace.name, query, { limit: 1, filters: {} });
        assert.equal(filtered[0]?.id, heron?.id);
      } finally {
        await store.close();
      }
    });

    it("a scope once counted large and then shrunk by a forget still finds all it holds (exact fallback)", async () => {
      const url = await cluster.freshDatabase();
      // Above 4 vectors a scope goes through the ANN index; the verdict is kept a while instead of counted per search.
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
