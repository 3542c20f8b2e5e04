import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { cairnProcess } from "../support/cairn-process.ts";
import { runCrashLoop } from "../support/crash-loop.ts";
import { tempDir } from "../support/fixtures.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";
import { rowsHolding } from "../support/postgres-rows.ts";

/**
 * The crash loop (`test/support/crash-loop.ts`, shared with SQLite) on the Postgres store: an
 * ingesting child and two forgetting children on one database, SIGKILLed mid-transaction round
 * after round. Besides the shared checks: no row of any table (read as the superuser) holds a
 * forgotten turn's marker, and `cairn check --db postgres://…` is clean. The files are not
 * scanned: Postgres keeps deleted tuples until VACUUM (see forget-residue-postgres.test.ts and
 * decision 009). CAIRN_CRASH_KILLS sets the number of kills (default 20 here); CAIRN_CRASH_SEED
 * replays a run.
 */

const skip = postgresSkipReason();
const kills = Number(process.env.CAIRN_CRASH_KILLS ?? 20);

if (skip) {
  describe("crash loop on Postgres", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();

  describe("crash loop on Postgres", () => {
    it(`${kills} SIGKILLs during ingest and forget lose no acknowledged session, revive no forgotten one, leave no forgotten row`, async (t) => {
      const root = tempDir(t, "cairn-crash-loop-pg-");
      const inputDir = join(root, "input");
      mkdirSync(inputDir);
      const url = await cluster.freshDatabase();
      const { memory, goneMarkers, context } = await runCrashLoop({
        location: url,
        inputDir,
        kills,
        diagnostic: (message) => t.diagnostic(message),
      });
      await memory.close();

      const admin = cluster.admin(new URL(url).pathname.slice(1));
      await admin.connect();
      t.after(() => admin.end());
      const needles = goneMarkers.map((marker) => ({ what: marker, text: marker }));
      assert.deepEqual(await rowsHolding(admin, needles), [], `forgotten markers in rows ${context}`);
      // A killed client's backend rolls its transaction back and exits once it reads the closed socket.
      const others = async () =>
        (
          await admin.query(
            `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
             AND backend_type = 'client backend'`,
          )
        ).rowCount;
      for (let wait = 0; wait < 50 && (await others()) !== 0; wait++) await sleep(100);
      assert.equal(await others(), 0, `connections of killed writers are gone ${context}`);
      const prepared = await admin.query("SELECT gid FROM pg_prepared_xacts");
      assert.equal(prepared.rowCount, 0, `no transaction left prepared ${context}`);

      const check = await cairnProcess(["check", "--db", url]);
      assert.equal(check.code, 0, `cairn check --db postgres://… ${context}: ${check.stdout}${check.stderr}`);
    });
  });
}
