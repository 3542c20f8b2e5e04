import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { tempDir } from "../support/fixtures.ts";
import { cairnHash } from "../support/migrate-fixture.ts";

describe("cairn reembed", () => {
  it("rebuilds a store made with other models so that search works again, and skips it on a second run", async (t) => {
    const db = join(tempDir(t), "store");
    // Built with 48-d hash vectors; the CLI's hash profile makes vectors of another size.
    const built = await Memory.open({ path: db, models: createHashModels({ dimensions: 48 }) });
    await built.addSession(
      { tenant: "acme", user: "ana" },
      { session: "s1", time: "2024-05-08T10:00:00Z", turns: [{ text: "the teal canoe with a zeppelin sticker" }] },
    );
    await built.close();
    const scope = ["--db", db, "--tenant", "acme", "--user", "ana"];

    const refused = await cairnHash(["search", "canoe", ...scope, "--json"]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /made by/);

    const reembedded = await cairnHash(["reembed", "--db", db, "--json"]);
    assert.equal(reembedded.code, 0, reembedded.stderr);
    const [done] = JSON.parse(reembedded.stdout).scopes;
    assert.equal(done.skipped, false);
    assert.equal(done.result.rawNodes, 1);
    assert.ok(done.result.from.some((name: string) => name.includes("48")));

    const found = await cairnHash(["search", "canoe", ...scope, "--json"]);
    assert.equal(found.code, 0, found.stderr);
    assert.equal(JSON.parse(found.stdout).items[0].text, "the teal canoe with a zeppelin sticker");

    const again = await cairnHash(["reembed", "--db", db, "--json"]);
    assert.equal(JSON.parse(again.stdout).scopes[0].skipped, true);
  });
});
