import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cairnProcess } from "../support/cairn-process.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";
import { spawnServe } from "../support/serve-process.ts";
import { twoInstancesOnOneStore } from "../support/shared-store.ts";

const skip = postgresSkipReason();

/** The shared-store deployment on what it is for: two `cairn serve` instances on one Postgres database. */
if (skip) {
  describe("two cairn serve instances on one Postgres database", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();
  describe("two cairn serve instances on one Postgres database", () => {
    it("writers race through both to one scope: none is lost or refused, either reads all, cairn check is clean", async (t) => {
      await twoInstancesOnOneStore(t, await cluster.freshDatabase());
    });

    it("API keys live in the database: a key made by the CLI opens both instances, a revocation closes both", async (t) => {
      const db = await cluster.freshDatabase();
      const cli = (args: string[]) => cairnProcess([...args, "--db", db, "--profile", "hash"]);
      const refused = await cli(["serve", "--port", "0"]);
      assert.equal(refused.code, 5, "no keys in the database and no --no-auth: serve refuses to start");
      const created = await cli(["keys", "create", "--tenant", "acme", "--user", "ana", "--json"]);
      assert.equal(created.code, 0, created.stderr);
      const { key, id } = JSON.parse(created.stdout) as { key: string; id: string };
      const instances = [await spawnServe(t, ["--db", db]), await spawnServe(t, ["--db", db])];
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
      const added = await fetch(`${instances[0]?.url}/v1/sessions`, {
        method: "POST",
        headers,
        body: JSON.stringify({ session: "k1", time: "2024-05-08T13:56:00Z", turns: [{ text: "the key works" }] }),
      });
      assert.equal(added.status, 201, await added.text());
      const listed = await fetch(`${instances[1]?.url}/v1/sessions`, { headers });
      assert.equal(listed.status, 200);
      assert.equal(((await listed.json()) as { sessions: unknown[] }).sessions.length, 1);
      const keys = await cli(["keys", "list", "--json"]);
      assert.ok(!keys.stdout.includes(key), "list never shows a key");
      assert.equal((await cli(["keys", "revoke", id])).code, 0);
      for (const instance of instances) {
        const after = await fetch(`${instance.url}/v1/stats`, { headers });
        assert.equal(after.status, 401, `${instance.url} refuses the revoked key at once`);
        await after.arrayBuffer();
      }
    });
  });
}
