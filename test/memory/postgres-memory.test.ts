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
      assert.deepEqual(await two.checkLexicalIndex(scope.tenant), [], "racing writers kept the BM25 statistics exact");
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

    it("checks the lexical structures against the document rows: names damage, and the repair rebuilds them", async (t) => {
      const url = await cluster.freshDatabase();
      const memory = await Memory.open({ path: url, models: createHashModels() });
      t.after(() => memory.close());
      for (let index = 0; index < 6; index++) await memory.addSession(scope, session(index));
      await memory.addSession({ tenant: "globex", user: "ana" }, session(7));
      const before = await memory.search(scope, "kayak harbour");
      assert.deepEqual(await memory.checkLexicalIndex(scope.tenant), []);
      // Under the store, as a superuser (past the tenant wall): a term's count, a posting, the totals.
      await cluster.inspect(url, async (client) => {
        await client.query(
          "UPDATE lexical_terms SET df = df + 1 WHERE tenant = 'acme' AND field = 'text' AND lexeme = 'kayak'",
        );
        await client.query(
          `DELETE FROM lexical_blocks WHERE ctid = (SELECT ctid FROM lexical_blocks
             WHERE tenant = 'acme' AND field = 'text' AND lexeme = 'harbour' LIMIT 1)`,
        );
        // A block whose stored bound is below its postings': the walk could skip a document for it.
        await client.query(
          `UPDATE lexical_blocks SET max_tf = 0 WHERE ctid = (SELECT ctid FROM lexical_blocks
             WHERE tenant = 'acme' AND field = 'text' AND lexeme = 'kayak' LIMIT 1)`,
        );
        // A block with a byte after its last posting (a number begun and cut short): its postings read the same.
        await client.query(
          `UPDATE lexical_blocks SET postings = postings || '\\x80'::bytea WHERE ctid = (SELECT ctid FROM lexical_blocks
             WHERE tenant = 'acme' AND field = 'text' AND lexeme = 'cello' LIMIT 1)`,
        );
        await client.query("UPDATE lexical_stats SET docs = docs + 2 WHERE tenant = 'acme' AND field = 'text'");
      });
      const problems = await memory.checkLexicalIndex(scope.tenant);
      assert.ok(
        problems.some((problem) => /^text "kayak": df \d+, held by \d+ documents$/.test(problem)),
        problems.join("\n"),
      );
      assert.ok(
        problems.some((problem) => /^text "harbour": raw node \d+ lacks its posting/.test(problem)),
        problems.join("\n"),
      );
      assert.ok(
        problems.some((problem) => /^text "kayak": the block from \d+ .*tf ≤ 0.* holds/.test(problem)),
        problems.join("\n"),
      );
      assert.ok(
        problems.some((problem) => /^text "cello": the block from \d+ .*, bytes past its postings$/.test(problem)),
        problems.join("\n"),
      );
      assert.ok(
        problems.some((problem) => problem.startsWith("text: statistics")),
        problems.join("\n"),
      );
      assert.deepEqual(await memory.checkLexicalIndex("globex"), [], "the other tenant is untouched and sound");
      const repair = await memory.repairLexicalIndex(scope.tenant);
      assert.equal(repair.rebuilt, true);
      assert.deepEqual(repair.after, []);
      const after = await memory.search(scope, "kayak harbour");
      assert.deepEqual(
        after.items.map((item) => item.rawNodeId),
        before.items.map((item) => item.rawNodeId),
        "the rebuilt structures rank as before",
      );
    });
  });
}
