import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pg from "pg";
import { NotFoundError } from "../../src/core/errors.ts";
import type { Scope } from "../../src/core/scope.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";
import {
  buildSessionWrite,
  embedImage,
  embedText,
  imageSpace,
  images,
  sha256,
  spaces,
  textSpace,
} from "./conformance-support.ts";
import { forget } from "./scoped-reads.ts";

/**
 * Tenant isolation on Postgres, wall by wall: tenant B's handle never returns tenant A's data
 * through any read of the seam, and row-level security alone (a raw connection, no scope filter)
 * shows a tenant none of another's rows, and shows nothing at all without the tenant setting.
 */

const skip = postgresSkipReason();
const tenantA: Scope = { tenant: "acme", user: "ana" };
const tenantB: Scope = { tenant: "globex", user: "bo" };
/** Tables without a tenant: the schema's versions and the vector spaces' names and tables. */
/**
 * Tables without a tenant wall: schema versions, vector-space names, and API keys (a key is verified
 * before its tenant is known; rows hold only the SHA-256 of each key, and no store handle reads them).
 */
const sharedTables = new Set(["schema_migrations", "vector_spaces", "api_keys"]);

if (skip) {
  describe("Postgres tenant isolation", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();

  /** Both tenants hold sessions, images (one the same picture), entries and audit; A forgot one raw node. */
  async function twoTenants() {
    const url = await cluster.freshDatabase();
    const store = await PostgresStore.open({ url });
    const { red, blue, green } = await images();
    const a = store.forScope(tenantA);
    const b = store.forScope(tenantB);
    const aWrite = await buildSessionWrite({
      key: "shared-key",
      turns: [
        { speaker: "Ana", text: "the okapi secret lives in the vault", images: [{ data: red, caption: "okapi map" }] },
        { speaker: "Ana", text: "narwhal plans for spring", images: [{ data: blue, derivedText: "VAULT 9" }] },
        { speaker: "Ana", text: "okapi okapi okapi" },
      ],
    });
    const mine = await a.commitSession(aWrite);
    await forget(a, { rawNode: mine.rawNodeIds[2] as string }, spaces);
    // A banked program (PMMC), so the question bank's tables hold A's rows too.
    await a.admitPrograms(
      [
        {
          id: "okapi-program",
          question: "where does the okapi secret live?",
          kind: "visual-attribute",
          program: { version: 1, output: "a", steps: [{ id: "a", op: "lexical", query: "okapi", limit: 5 }] },
          vector: null,
          space: null,
          imageVector: null,
          imageSpace: null,
          evidence: mine.rawNodeIds.slice(0, 1),
          sessions: ["shared-key"],
          coverFromMs: 0,
          coverToMs: 0,
          verification: {},
          createdMs: 0,
        },
      ],
      { action: "bank.admit", subject: "okapi", details: { programs: 1 } },
    );
    // Turns appended to A's session, so session_parts holds A's rows too.
    const appended = await buildSessionWrite({
      key: "shared-key",
      turns: [{ speaker: "Ana", text: "okapi postscript" }],
    });
    await a.commitSession({ ...appended, append: { partKey: "okapi-part" } });
    // Video memory (an entity with a gallery slot from A's first frame, the notifier's record), so its tables are checked too.
    await a.commitVideo({
      put: [
        {
          id: "vent_a",
          kind: "entity",
          stream: null,
          entityId: null,
          startMs: 0,
          endMs: 0,
          text: "",
          data: {},
          vector: null,
          sources: [],
        },
        {
          id: "vslot_a",
          kind: "slot",
          stream: "cam",
          entityId: "vent_a",
          startMs: 0,
          endMs: 0,
          text: "",
          data: { modality: "face" },
          vector: new Float32Array([1, 0]),
          sources: [mine.rawNodeIds[0] as string],
        },
      ],
      remove: [],
      audits: [],
      // And the notifier's record of what the camera recently sent.
      notifier: {
        stream: "cam",
        rules: [{ ruleId: "vrule_a", holding: true, lastSentMs: 18_000, event: 0, sentInEvent: 1 }],
      },
    });
    const theirs = await b.commitSession(
      await buildSessionWrite({
        key: "shared-key",
        turns: [{ speaker: "Bo", text: "a quiet heron by the pond", images: [{ data: blue }, { data: green }] }],
      }),
    );
    return { url, store, a, b, aWrite, mine, theirs, red, blue, green };
  }

  describe("Postgres tenant isolation", () => {
    it("every read of tenant B's handle misses tenant A's data, even by A's ids, keys, hashes and vectors", async () => {
      const { store, a, b, aWrite, mine, theirs, red, blue } = await twoTenants();
      try {
        const aIds = mine.rawNodeIds.slice(0, 2);
        const aEntries = [...(await a.readIndex({ activeOnly: false })).entries.keys()];
        assert.ok(aEntries.length > 0, "A has entries to guess");
        const bIds = new Set(theirs.rawNodeIds);
        const onlyB = (found: readonly { id: string }[], what: string) =>
          assert.ok(
            found.every((hit) => bIds.has(hit.id)),
            `${what} returned A's ${found.map((hit) => hit.id)}`,
          );

        assert.deepEqual(
          (await b.readSessions({})).map((session) => session.id),
          [theirs.session.id],
        );
        assert.deepEqual(await b.readSessions({ ids: [mine.session.id] }), []);
        assert.deepEqual(
          (await b.readSessions({ keys: ["shared-key"] })).map((session) => session.id),
          [theirs.session.id],
        );
        assert.deepEqual(await b.readRawNodes({ ids: aIds }), []);
        assert.deepEqual(await b.readRawNodes({ sessionId: mine.session.id }), []);
        assert.deepEqual(await b.readRawNodes({ near: aIds, window: 5 }), []);
        await assert.rejects(b.readBlob(sha256(red)), NotFoundError, "A's own image");
        await assert.rejects(b.readBlob(sha256(red), { thumbnail: true }), NotFoundError);
        // B holds blue itself: it reads its own copy, with its own record.
        assert.deepEqual(Buffer.from((await b.readBlob(sha256(blue))).data), blue);
        const known = await b.knownImages([sha256(red), sha256(blue)], imageSpace.name);
        assert.deepEqual([...known.keys()], [sha256(blue)], "only the image B's raw nodes reference");
        assert.equal(known.get(sha256(blue))?.derivedText, null, "A's OCR of the same pixels is not B's");
        const audit = await b.readAudit();
        assert.ok(audit.length > 0);
        const aNames = [mine.session.id, ...mine.rawNodeIds, ...aEntries];
        assert.ok(!aNames.some((name) => JSON.stringify(audit).includes(name)), "B's audit names none of A's ids");
        assert.deepEqual(await b.stats(), { sessions: 1, rawNodes: 1, images: 2, entries: 1, auditEvents: 2 });
        for (const word of ["okapi", "narwhal vault", "secret"]) {
          assert.deepEqual(await b.searchLexical("text", word, { limit: 10 }), [], word);
        }
        assert.deepEqual(await b.searchLexical("imageText", "okapi map vault", { limit: 10 }), []);
        const textVector = aWrite.rawNodes[0]?.textVectors[textSpace.name];
        assert.ok(textVector);
        onlyB(await b.searchVectors(textSpace.name, textVector, { limit: 10 }), "text vectors");
        onlyB(await b.searchVectors(imageSpace.name, await embedImage(red), { limit: 10 }), "image vectors");
        onlyB(
          await b.searchVectors(textSpace.name, await embedText("okapi secret"), {
            limit: 10,
            filters: { sessionKeys: ["shared-key"] },
          }),
          "filtered vectors",
        );
        assert.deepEqual(await b.readVectors(textSpace.name, aIds), new Map());
        assert.deepEqual(await b.readBank(), [], "A's question bank");
        assert.equal(
          await b.retirePrograms(["okapi-program"], { action: "bank.retire", subject: "x", details: {} }),
          0,
        );
        assert.equal((await a.readBank()).length, 1, "B's retire did not reach A's program");
        const index = await b.readIndex({ activeOnly: false });
        assert.ok(aEntries.every((id) => !index.entries.has(id)));
        assert.deepEqual(await b.indexStatus(), { version: 1, needsRebuild: false }, "B's own version");
        assert.deepEqual(await b.readLinkedEntries({ hosts: aEntries, ids: aEntries }), []);
      } finally {
        await store.close();
      }
    });

    it("row-level security alone: tenant B's setting shows none of A's rows in any table, no setting shows nothing", async () => {
      const { url, store } = await twoTenants();
      await store.close();
      // The store's own role (it owns the tables; FORCE makes the policies bind it too), with no scope filter at all.
      const raw = new pg.Client({ connectionString: url });
      await raw.connect();
      const superuser = cluster.admin(new URL(url).pathname.slice(1));
      await superuser.connect();
      try {
        const tables = (
          await superuser.query<{ name: string; secured: boolean; forced: boolean }>(
            `SELECT c.relname AS name, c.relrowsecurity AS secured, c.relforcerowsecurity AS forced
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 1`,
          )
        ).rows;
        const walled = tables.filter((table) => !sharedTables.has(table.name));
        assert.ok(
          walled.some((table) => table.name.startsWith("vec_")),
          "the vector tables are checked too",
        );
        assert.ok(
          walled.some((table) => table.name === "lexical_blocks"),
          "the lexical postings' blocks are checked too",
        );
        for (const table of walled) {
          assert.ok(table.secured && table.forced, `${table.name} has forced row-level security`);
        }
        for (const { name } of walled) {
          const all = (await superuser.query(`SELECT * FROM ${name}`)).rows as { tenant: string }[];
          // Every table holds A's rows, so each check below could fail (scopes and keys included).
          assert.ok(
            all.some((row) => row.tenant === tenantA.tenant),
            `${name} holds tenant A's rows (a superuser sees them)`,
          );

          await raw.query("BEGIN; SET LOCAL cairn.tenant = 'globex'");
          const seenByB = (await raw.query(`SELECT * FROM ${name}`)).rows as { tenant: string }[];
          await raw.query("COMMIT");
          assert.deepEqual(
            seenByB.filter((row) => row.tenant !== tenantB.tenant),
            [],
            `${name}: B's setting shows only B's rows`,
          );

          const unset = (await raw.query(`SELECT count(*)::int AS n FROM ${name}`)).rows[0] as { n: number };
          assert.equal(unset.n, 0, `${name}: without cairn.tenant nothing is visible`);
        }
        // A write cannot put a row into another tenant either.
        await raw.query("BEGIN; SET LOCAL cairn.tenant = 'globex'");
        await assert.rejects(
          raw.query("INSERT INTO index_state (scope_key, tenant, version) VALUES ('acme/x/', 'acme', 0)"),
          /row-level security/,
        );
        await raw.query("ROLLBACK");
      } finally {
        await raw.end();
        await superuser.end();
      }
    });
  });
}
