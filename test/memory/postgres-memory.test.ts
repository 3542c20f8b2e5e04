import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";

/**
 * The SDK on the Postgres store, opened by URL (`--db postgres://…` goes the same way): two
 * memories on one database stand for two `cairn serve` instances sharing it.
 */

const skip = postgresSkipReason();
const scope = { tenant: "acme", user: "ana" };

function session(index: number) {
  return {
    session: `s${index}`,
    time: new Date(Date.UTC(2024, 0, 1, index)).toISOString(),
    turns: [
      {
        speaker: "Ana",
        text: `Note ${index}: the ${["kayak", "cello", "corgi", "basil"][index % 4]} again, day ${index}.`,
      },
      { speaker: "Bo", text: `Reply ${index} about the harbour and the train to Porto.` },
    ],
  };
}

if (skip) {
  describe("Memory on Postgres", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();

  describe("Memory on Postgres", () => {
    it("two memories on one database: racing writes and forgets all land, reads see them, the index stays sound", async (t) => {
      const url = await cluster.freshDatabase();
      const options = { path: url, models: createHashModels(), maintenance: { bounds: { entries: 4 } } };
      const one = await Memory.open(options);
      const two = await Memory.open(options);
      t.after(async () => {
        await one.close();
        await two.close();
      });
      // Two users of one tenant written at once through both: their commits share the tenant's
      // statistics rows (and must wait for each other, not deadlock).
      const bo = { tenant: scope.tenant, user: "bo" };
      const written = await Promise.all(
        Array.from({ length: 16 }, (_, index) =>
          (index % 2 === 0 ? one : two).addSession(index % 4 < 2 ? scope : bo, session(index)),
        ),
      );
      assert.equal(written.filter((result) => !result.duplicate).length, 16);
      assert.equal((await two.stats(scope)).sessions, 8, "each memory sees the other's acknowledged writes");
      assert.equal((await one.stats(bo)).sessions, 8);
      // One scope through both at once: a plan made stale by the other instance is made again.
      await Promise.all([
        one.forget(scope, { session: "s0" }),
        two.forget(scope, { session: "s1" }),
        one.addSession(scope, session(40)),
        two.addSession(scope, session(41)),
      ]);
      const check = await one.checkIndex(scope);
      assert.deepEqual(check.violations, []);
      assert.equal(check.utilisation.pointers, 16, "every surviving raw node is pointed at, no forgotten one is");
      const pack = await two.search(scope, "kayak");
      const texts = pack.items.map((item) => item.text);
      assert.ok(
        texts.some((text) => text.includes("kayak")),
        `the search finds the kayak notes: ${texts.join(" | ")}`,
      );
      assert.ok(!texts.some((text) => text.includes("Note 0:") || text.includes("Note 1:")), "forgotten is gone");
      assert.deepEqual(
        (await one.stats({ tenant: "globex", user: "ana" })).sessions,
        0,
        "another tenant's user of the same name has nothing",
      );
    });
  });
}
