import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { cairnProcess } from "../support/cairn-process.ts";
import { tempDir } from "../support/fixtures.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";

const examples = join(import.meta.dirname, "../../examples/demo.jsonl");
const cairn = (args: string[]) => cairnProcess([...args, "--profile", "hash"], { timeoutMs: 180_000 });
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
      const ingested = await cairn(["ingest", examples, "--db", source, "--tenant", "demo", "--user", "ana"]);
      assert.equal(ingested.code, 0, ingested.stderr);
      const forgot = await cairn([
        "forget",
        "--db",
        source,
        "--tenant",
        "demo",
        "--user",
        "ana",
        "--session",
        "2024-03-02-bike",
        "--yes",
      ]);
      assert.equal(forgot.code, 0, forgot.stderr);

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
      for (const query of ["where did Ana go kayaking?", "the orange boat", "wedding in October"]) {
        const search = (db: string) =>
          cairn(["search", query, "--db", db, "--tenant", "demo", "--user", "ana", "--json"]).then((result) => {
            assert.equal(result.code, 0, result.stderr);
            return JSON.parse(result.stdout).items.map((item: { rawNodeId: string }) => item.rawNodeId);
          });
        assert.deepEqual(await search(back), await search(source), query);
        assert.ok((await search(database)).length > 0, `Postgres answers "${query}"`);
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
