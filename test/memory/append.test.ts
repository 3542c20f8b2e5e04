import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { InputError } from "../../src/core/errors.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { drawPng, tempDir } from "../support/fixtures.ts";
import { snapshotTree } from "../support/store-snapshot.ts";

const scope = { tenant: "acme", user: "ana" };
const clock = Date.parse("2024-07-01T09:30:00Z");

async function open(t: TestContext) {
  const path = join(tempDir(t), "store");
  const memory = await Memory.open({ path, models: createHashModels(), ownsModels: true, now: () => clock });
  t.after(() => memory.close());
  return { memory, path };
}

describe("Memory.appendTurns", () => {
  it("adds turns to a stored conversation: earlier raw nodes untouched, new ones indexed and searchable", async (t) => {
    const { memory } = await open(t);
    const first = await memory.addSession(scope, {
      session: "chat-7",
      time: "2024-07-01T09:00:00Z",
      turns: [
        { speaker: "Ana", text: "We bought a canoe last weekend." },
        { speaker: "Bo", text: "Nice, which colour?" },
      ],
    });
    const before = await memory.listRawNodes(scope, first.sessionId);
    const appended = await memory.appendTurns(scope, "chat-7", {
      turns: [{ speaker: "Ana", text: "Teal, with a zeppelin sticker on the bow." }],
    });
    assert.equal(appended.duplicate, false);
    assert.equal(appended.sessionId, first.sessionId);
    assert.equal(appended.rawNodeIds.length, 1);
    assert.ok(appended.maintenance.actions.length > 0, "maintenance planned for the new segment");

    const after = await memory.listRawNodes(scope, first.sessionId);
    assert.deepEqual(after.slice(0, 2), before, "earlier raw nodes are exactly as they were");
    assert.equal(after[2]?.turn, 2);
    assert.equal(after[2]?.time, "2024-07-01T09:30:00.000Z", "a turn without a time gets the clock's");
    assert.equal((await memory.getSession(scope, "chat-7")).turnCount, 3);

    const pack = await memory.search(scope, "zeppelin sticker");
    assert.equal(pack.items[0]?.rawNodeId, appended.rawNodeIds[0]);
    const check = await memory.checkIndex(scope);
    assert.deepEqual(check.violations, [], "every raw node, old and new, is reachable from the index");
  });

  it("acknowledges a retried append instead of adding it twice; a part key appends the same words again", async (t) => {
    const { memory } = await open(t);
    const turns = { turns: [{ speaker: "Ana", text: "ok" }] };
    const one = await memory.appendTurns(scope, "log", turns);
    assert.equal(one.duplicate, false, "an append to a missing session makes it");
    const retry = await memory.appendTurns(scope, "log", turns);
    assert.equal(retry.duplicate, true);
    assert.deepEqual(retry.rawNodeIds, one.rawNodeIds);
    const onPurpose = await memory.appendTurns(scope, "log", turns, { partKey: "second-ok" });
    assert.equal(onPurpose.duplicate, false);
    assert.equal((await memory.getSession(scope, "log")).turnCount, 2);
    // Appending to a session that addSession made, and then addSession of it again: still its original content.
    const whole = { session: "s", time: "2024-07-01T08:00:00Z", turns: [{ text: "first" }] };
    await memory.addSession(scope, whole);
    await memory.appendTurns(scope, "s", { turns: [{ text: "second" }] });
    assert.equal((await memory.addSession(scope, whole)).duplicate, true);
  });

  it("rejects bad input with a typed error and changes nothing", async (t) => {
    const { memory, path } = await open(t);
    await memory.addSession(scope, { session: "s", time: "2024-07-01T08:00:00Z", turns: [{ text: "first" }] });
    const before = snapshotTree(path);
    const cases: [unknown, string, object?][] = [
      [null, "input"],
      [{ turns: [] }, "turns"],
      [{ turns: [{ text: 5 }] }, "turns[0].text"],
      [{ session: "other", turns: [{ text: "x" }] }, "session"],
      [{ time: "5", turns: [{ text: "x" }] }, "time"],
      [{ turns: [{ text: "x" }] }, "partKey", { partKey: "has space" }],
    ];
    for (const [input, field, options] of cases) {
      await assert.rejects(memory.appendTurns(scope, "s", input, options), (error: unknown) => {
        assert.ok(error instanceof InputError, `${field}: ${String(error)}`);
        assert.match(error.field, new RegExp(`^${field.replace(/[[\].]/g, "\\$&")}`));
        return true;
      });
    }
    assert.deepEqual(snapshotTree(path), before);
    assert.equal((await memory.getSession(scope, "s")).turnCount, 1);
  });
});

describe("Memory.remember", () => {
  it("files a note with an image at the current time, found by search, each note its own session", async (t) => {
    const { memory } = await open(t);
    const png = await drawPng({ shape: "circle", color: "#c00", background: "#fff" });
    const note = await memory.remember(scope, "my new red helmet", {
      images: [{ data: Buffer.from(png).toString("base64"), caption: "red helmet" }],
    });
    assert.equal(note.time, "2024-07-01T09:30:00.000Z");
    assert.equal(note.sessionKey, "remember/day/2024-07-01/0001");
    const node = await memory.getRawNode(scope, note.rawNodeId);
    assert.equal(node.images.length, 1);
    const second = await memory.remember(scope, "helmet size is M", { conversation: "gear" });
    assert.equal(second.sessionKey, "remember/gear/2024-07-01/0001");
    const pack = await memory.search(scope, "red helmet");
    assert.equal(pack.items[0]?.rawNodeId, note.rawNodeId);
    await assert.rejects(memory.remember(scope, "   "), InputError);
  });
});
