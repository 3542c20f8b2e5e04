import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { tempDir } from "../support/fixtures.ts";
import { cairnHash, demoSearch, demoSourceWithForget, migrateQueries } from "../support/migrate-fixture.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";

const cairn = cairnHash;
const skip = postgresSkipReason();

/** `cairn migrate` into a Postgres database and back out of it, every record and image hash compared each way. */
if (skip) {
  describe("cairn migrate through Postgres", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();

  describe("cairn migrate through Postgres", () => {
    it("SQLite → Postgres → SQLite copies record for record; the round trip answers every search as the source", async (t) => {
      const dir = tempDir(t);
      const [source, back] = [join(dir, "source"), join(dir, "back")];
      const database = await cluster.freshDatabase();
      await demoSourceWithForget(source);

      const into = await cairn(["migrate", "--db", source, "--to", database, "--json"]);
      assert.equal(into.code, 0, into.stderr);
      const report = JSON.parse(into.stdout);
      assert.deepEqual(report.differences, []);
      assert.ok(report.sessions > 0 && report.blobs > 0 && report.entries > 0, into.stdout);
      const checked = await cairn(["check", "--db", database, "--json"]);
      assert.equal(checked.code, 0, checked.stdout);

      const out = await cairn(["migrate", "--db", database, "--to", back, "--json"]);
      assert.equal(out.code, 0, out.stderr);
      assert.deepEqual(JSON.parse(out.stdout).differences, []);
      const ids = async (db: string, query: string) => (await demoSearch(db, query)).map(([id]) => id);
      for (const query of migrateQueries) {
        assert.deepEqual(await ids(back, query), await ids(source, query), query);
        assert.ok((await ids(database, query)).length > 0, `Postgres answers "${query}"`);
      }
    });

    it("refuses a database that holds no store as the source, creating nothing in it", async (t) => {
      const empty = await cluster.freshDatabase();
      const target = join(tempDir(t), "target");
      const refused = await cairn(["migrate", "--db", empty, "--to", target]);
      assert.equal(refused.code, 3, refused.stderr);
      // Still no store in it: a second refusal, not a migrated empty store.
      assert.equal((await cairn(["migrate", "--db", empty, "--to", target])).code, 3);
    });
  });
}
