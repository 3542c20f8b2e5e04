import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ModelMismatchError } from "../../src/core/errors.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { tempDir } from "../support/fixtures.ts";
import { snapshotTree } from "../support/store-snapshot.ts";

const scope = { tenant: "acme", user: "ana" };
const session = (key: string, text: string) => ({ session: key, time: "2024-05-08T10:00:00Z", turns: [{ text }] });

describe("a store searched or written with other models than built it", () => {
  it("is a typed error naming both models, and changes nothing", async (t) => {
    const path = join(tempDir(t), "store");
    const built = await Memory.open({ path, models: createHashModels({ dimensions: 256 }) });
    await built.addSession(scope, session("s1", "the teal canoe with a zeppelin sticker"));
    await built.close();

    const other = await Memory.open({ path, models: createHashModels({ dimensions: 128 }) });
    t.after(() => other.close());
    const before = snapshotTree(path);
    await assert.rejects(other.search(scope, "canoe"), (error: unknown) => {
      assert.ok(error instanceof ModelMismatchError);
      assert.equal(error.code, "config");
      assert.ok(
        error.stored.some((name) => name.includes("256")),
        `stored ${error.stored}`,
      );
      assert.ok(
        error.current.some((name) => name.includes("128")),
        `current ${error.current}`,
      );
      assert.match(error.message, /--profile/);
      return true;
    });
    await assert.rejects(other.addSession(scope, session("s2", "another note")), ModelMismatchError);
    await assert.rejects(other.appendTurns(scope, "s1", { turns: [{ text: "more" }] }), ModelMismatchError);
    assert.deepEqual(snapshotTree(path), before, "nothing was written");
    // Another scope with no vectors yet is free to use the new models.
    await other.addSession({ tenant: "acme", user: "bo" }, session("b1", "fresh start"));
  });

  it("with onModelMismatch: warn, searches without the foreign vectors and says so", async (t) => {
    const path = join(tempDir(t), "store");
    const built = await Memory.open({ path, models: createHashModels({ dimensions: 256 }) });
    await built.addSession(scope, session("s1", "the teal canoe with a zeppelin sticker"));
    await built.close();
    const other = await Memory.open({ path, models: createHashModels({ dimensions: 128 }), onModelMismatch: "warn" });
    t.after(() => other.close());
    const pack = await other.search(scope, "zeppelin");
    assert.ok(
      pack.warnings.some((warning) => /other models/.test(warning)),
      pack.warnings.join("; "),
    );
    assert.equal(pack.items[0]?.text, "the teal canoe with a zeppelin sticker", "the lexical channel still finds it");
  });

  it("the same models find their own vectors without a warning", async (t) => {
    const path = join(tempDir(t), "store");
    const memory = await Memory.open({ path, models: createHashModels() });
    t.after(() => memory.close());
    await memory.addSession(scope, session("s1", "the teal canoe"));
    const pack = await memory.search(scope, "canoe");
    assert.deepEqual(pack.warnings, []);
  });
});
