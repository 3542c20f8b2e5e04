import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ModelMismatchError } from "../../src/core/errors.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { drawPng } from "../support/fixtures.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";

const skip = postgresSkipReason();
const scope = { tenant: "acme", user: "ana" };

if (skip) {
  describe("reembed on Postgres", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();

  /** Raw evidence as the database holds it, read as a superuser: rows of the cold-store tables. */
  async function rawEvidence(url: string) {
    const client = cluster.admin(new URL(url).pathname.slice(1));
    await client.connect();
    try {
      const rows: Record<string, unknown[]> = {};
      for (const table of ["sessions", "raw_nodes", "raw_node_images", "blobs"]) {
        rows[table] = (await client.query(`SELECT * FROM ${table} ORDER BY 1, 2`)).rows;
      }
      return rows;
    } finally {
      await client.end();
    }
  }

  describe("reembed on Postgres", () => {
    it("swaps the vectors for the models in use, leaves raw rows and image bytes identical, and search works", async (t) => {
      const url = await cluster.freshDatabase();
      const red = await drawPng({ color: "#c00" });
      const built = await Memory.open({ path: url, models: createHashModels({ dimensions: 96 }) });
      await built.addSession(scope, {
        session: "s1",
        time: "2024-05-08T10:00:00Z",
        turns: [
          { text: "the teal canoe with a zeppelin sticker", images: [{ data: red, caption: "a red sail" }] },
          { text: "soup at the harbour" },
        ],
      });
      await built.close();
      const before = await rawEvidence(url);

      const memory = await Memory.open({ path: url, models: createHashModels({ dimensions: 32 }) });
      t.after(() => memory.close());
      await assert.rejects(memory.search(scope, "canoe"), ModelMismatchError);
      const [done] = await memory.reembed(scope);
      assert.equal(done?.result?.rawNodes, 2);
      assert.ok(done?.result?.to.every((name) => !name.includes("96")));
      const pack = await memory.search(scope, "teal canoe");
      assert.equal(pack.items[0]?.text, "the teal canoe with a zeppelin sticker");
      assert.deepEqual(pack.warnings, []);
      const image = pack.items[0]?.images[0];
      assert.ok(image);
      assert.deepEqual(Buffer.from((await memory.getBlob(scope, image.hash)).data), Buffer.from(red));
      assert.deepEqual(await rawEvidence(url), before, "raw rows are as they were");
      assert.equal((await memory.checkIndex(scope)).violations.length, 0);
      assert.ok((await memory.listAudit(scope)).some((event) => event.action === "reembed"));
    });
  });
}
