import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ConflictError } from "../../src/core/errors.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../../src/store/store.ts";
import { compareStores, copyStore } from "../../src/store/transfer.ts";
import { tempDir } from "../support/fixtures.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";
import { base, buildSessionWrite, hour, scopeA, scopeC, spaces } from "./conformance-support.ts";
import { findSessionByKey, forget } from "./scoped-reads.ts";
import { extras } from "./transfer-conformance.ts";

const skip = postgresSkipReason();

/** Two tenants, each with a forget behind it, and (in scope C) appended parts, a program and video items. */
async function populate(store: Store) {
  for (const scope of [scopeA, scopeC]) {
    for (const key of ["monday", "tuesday", "wednesday"]) {
      await store.forScope(scope).commitSession(
        await buildSessionWrite({
          key,
          timeMs: base + hour * key.length,
          turns: [{ speaker: "Ana", text: `${key}: the ferry to ${scope.tenant} ran late` }],
        }),
      );
    }
    await forget(store.forScope(scope), { session: "monday" }, spaces);
  }
  return extras(store.forScope(scopeC));
}

/** The subject a forget of `key` leaves in the audit log: a keyed hash under the store's secret. */
async function forgetSubject(store: Store, key: string): Promise<string> {
  const scoped = store.forScope(scopeA);
  await forget(scoped, { session: key }, spaces);
  const [event] = await scoped.readAudit({ limit: 1 });
  assert.equal(event?.action, "forget");
  return event?.subject ?? "";
}

/**
 * `copyStore` across backends: SQLite → Postgres → SQLite with appended parts, the question bank and
 * video memory, and the audit log's keyed hashes with and without the source's secret.
 */
if (skip) {
  describe("copyStore between SQLite and Postgres", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();
  const postgres = async () => PostgresStore.open({ url: await cluster.freshDatabase() });

  describe("copyStore between SQLite and Postgres", () => {
    it("a round trip keeps parts, programs, video items and the notifier record; a retried append stays a duplicate on each side", async (t) => {
      const dir = tempDir(t);
      const source = await SqliteStore.open({ path: join(dir, "source") });
      const middle = await postgres();
      const back = await SqliteStore.open({ path: join(dir, "back") });
      try {
        const { retry } = await populate(source);
        const into = await copyStore(source, middle);
        assert.deepEqual([into.sessionParts, into.programs, into.videoItems, into.notifierRules], [2, 1, 4, 1]);
        assert.deepEqual(await compareStores(source, middle), []);
        const out = await copyStore(middle, back);
        assert.deepEqual([out.sessionParts, out.programs, out.videoItems, out.notifierRules], [2, 1, 4, 1]);
        assert.deepEqual(await compareStores(middle, back), []);
        assert.deepEqual(await compareStores(source, back), []);
        for (const store of [middle, back]) {
          const retried = await store.forScope(scopeC).commitSession(await retry());
          assert.equal(retried.duplicate, true, `${store.kind}: the copied part acknowledges the retry`);
        }
        assert.deepEqual(await compareStores(source, back), [], "the retries wrote nothing");
      } finally {
        await Promise.all([source.close(), middle.close(), back.close()]);
      }
    });

    it("keyed hashes keep matching only where the secret was carried; a carry that would break hashes is refused", async (t) => {
      const dir = tempDir(t);
      const source = await SqliteStore.open({ path: join(dir, "source") });
      const plain = await postgres();
      const carried = await postgres();
      const fresh = await SqliteStore.open({ path: join(dir, "fresh") });
      try {
        await populate(source);
        const secret = await source.readAuditSecret("acme");
        assert.ok(secret);

        const without = await copyStore(source, plain);
        assert.equal(without.auditSecretCarried, false);
        assert.ok(without.foreignKeyedEvents > 0, "the copied forgets' hashes are under the source's secret");
        const withSecret = await copyStore(source, carried, { carryAuditSecret: true });
        assert.equal(withSecret.foreignKeyedEvents, 0);
        for (const tenant of ["acme", "globex"]) {
          assert.deepEqual(await carried.readAuditSecret(tenant), secret, `${tenant} took the store's secret`);
        }
        assert.deepEqual(await compareStores(source, carried), []);

        // The same forget made on the source and on each copy: only the carried copy hashes it alike.
        const onSource = await forgetSubject(source, "tuesday");
        assert.match(onSource, /^hmac-sha256:[0-9a-f]{64}$/);
        assert.equal(await forgetSubject(carried, "tuesday"), onSource);
        assert.notEqual(await forgetSubject(plain, "tuesday"), onSource);

        // `plain` now holds two tenants' own secrets (each made by a forget there): one SQLite store
        // cannot keep both, so carrying them is refused before anything is written.
        await forget(plain.forScope(scopeC), { session: "tuesday" }, spaces);
        const [acme, globex] = [await plain.readAuditSecret("acme"), await plain.readAuditSecret("globex")];
        assert.ok(acme && globex && !Buffer.from(acme).equals(globex));
        const before = await fresh.readAuditSecret("acme");
        await assert.rejects(copyStore(plain, fresh, { carryAuditSecret: true }), ConflictError);
        assert.deepEqual(await fresh.listScopes(), [], "nothing copied");
        assert.deepEqual(await fresh.readAuditSecret("acme"), before, "the secret kept");

        // A store whose log already holds hashes under its own secret does not take another.
        const copied = await copyStore(plain, fresh);
        assert.ok(copied.foreignKeyedEvents > 0);
        await assert.rejects(fresh.adoptAuditSecret("acme", secret), ConflictError);
        await assert.rejects(plain.adoptAuditSecret("acme", secret), ConflictError);
        assert.ok(await findSessionByKey(fresh.forScope(scopeA), "wednesday"), "the copy is usable");
      } finally {
        await Promise.all([source.close(), plain.close(), carried.close(), fresh.close()]);
      }
    });
  });
}
