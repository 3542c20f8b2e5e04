import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import { checkInvariantsProperty, type PropertyStore } from "../support/invariants-property.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";

/**
 * The invariants property (`test/support/invariants-property.ts`) on the Postgres store: a short
 * run (CAIRN_PROPERTY_RUNS, default 10), each on a fresh database. Beneath the SDK it reads every
 * row of every table as the superuser: a rejected write leaves every row as it was, and the
 * `blobs` table holds exactly the referenced images, one copy per tenant, bytes hashing to the name.
 */

const skip = postgresSkipReason();
const numRuns = Number(process.env.CAIRN_PROPERTY_RUNS ?? 10);
const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");

if (skip) {
  describe("invariants on Postgres", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();

  const postgresPropertyStore = async (): Promise<PropertyStore> => {
    const url = await cluster.freshDatabase();
    const admin = cluster.admin(new URL(url).pathname.slice(1));
    await admin.connect();
    return {
      location: url,
      async snapshot() {
        const tables = await admin.query<{ name: string }>(
          "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
        );
        const rows: Record<string, string[]> = {};
        for (const { name } of tables.rows) {
          const result = await admin.query<{ row: string }>(`SELECT t::text AS row FROM public."${name}" t`);
          rows[name] = result.rows.map(({ row }) => row).sort();
        }
        return rows;
      },
      async checkBlobs(referenced) {
        const blobs = await admin.query<{ tenant: string; hash: string; data: Buffer; thumbnail: Buffer }>(
          "SELECT tenant, hash, data, thumbnail FROM blobs",
        );
        assert.deepEqual(
          new Set(blobs.rows.map((row) => `${row.tenant}/${row.hash}`)),
          referenced,
          "blob rows are exactly the referenced blobs",
        );
        for (const row of blobs.rows) {
          assert.equal(sha256(row.data), row.hash);
          assert.ok(row.thumbnail.length > 0);
        }
      },
      dispose: () => admin.end(),
    };
  };

  describe("invariants on Postgres", () => {
    it(`${numRuns} random sequences: raw data immutable, scopes isolated, rejected writes change no row, forgotten data gone`, async () => {
      await checkInvariantsProperty({ numRuns, open: postgresPropertyStore });
    });
  });
}
