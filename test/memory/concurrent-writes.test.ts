import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { tempDir } from "../support/fixtures.ts";

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

describe("concurrent writers of one scope", () => {
  it("all land, and the active index keeps its invariants, within one memory and across two", async (t) => {
    const path = join(tempDir(t), "store");
    const one = await Memory.open({ path, models: createHashModels(), maintenance: { bounds: { entries: 4 } } });
    // A second Memory on the same folder has its own connection: its plans race the first one's
    // and lose to the index version check, then are made again.
    const two = await Memory.open({ path, models: createHashModels(), maintenance: { bounds: { entries: 4 } } });
    t.after(async () => {
      await one.close();
      await two.close();
    });
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, index) => (index % 2 === 0 ? one : two).addSession(scope, session(index))),
    );
    assert.equal(results.filter((result) => !result.duplicate).length, 24);
    assert.equal((await one.stats(scope)).sessions, 24);
    const check = await one.checkIndex(scope);
    assert.deepEqual(check.violations, []);
    assert.equal(check.utilisation.pointers, 48, "every raw node of every write is pointed at");
    assert.ok(check.utilisation.entries <= 4);
  });

  it("forgets and writes racing in one scope and across two memories all land, and the index stays sound", async (t) => {
    const path = join(tempDir(t), "store");
    const options = { path, models: createHashModels(), maintenance: { bounds: { entries: 3 } } };
    const one = await Memory.open(options);
    const two = await Memory.open(options);
    t.after(async () => {
      await one.close();
      await two.close();
    });
    for (let index = 0; index < 12; index++) await one.addSession(scope, session(index));
    // Forgets plan against the whole index; every write and every other forget moves its version.
    const work = Array.from({ length: 24 }, (_, index) => {
      const memory = index % 3 === 0 ? two : one;
      return index % 2 === 0
        ? memory.forget(scope, { session: `s${index / 2}` })
        : memory.addSession(scope, session(100 + index));
    });
    await Promise.all(work);
    assert.equal((await one.stats(scope)).sessions, 12, "12 of 12 stored sessions forgotten, 12 new ones landed");
    const check = await two.checkIndex(scope);
    assert.deepEqual(check.violations, []);
    assert.equal(check.utilisation.pointers, 24, "every surviving raw node is pointed at, no forgotten one is");
  });
});
