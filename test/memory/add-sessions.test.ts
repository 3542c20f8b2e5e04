import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { ConflictError, InputError } from "../../src/core/errors.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { tempDir } from "../support/fixtures.ts";
import { snapshotTree } from "../support/store-snapshot.ts";

const scope = { tenant: "acme", user: "ana" };
const clock = Date.parse("2024-07-01T09:30:00Z");
const people = ["Ana", "Bo", "Chen"];
const places = ["Lisbon", "Porto", "Oslo", "Quito"];
const things = ["canoe", "violin", "teapot", "zeppelin", "kayak"];

/** Twelve sessions that repeat, update and vary facts, so maintenance merges, updates and consolidates. */
function sessions() {
  return Array.from({ length: 12 }, (_, index) => ({
    session: `s${index}`,
    time: new Date(Date.parse("2024-05-01T10:00:00Z") + index * 86_400_000).toISOString(),
    turns: Array.from({ length: 3 + (index % 3) }, (_, turn) => {
      const who = people[(index + turn) % 3] as string;
      const where = places[(index * 2 + turn) % 4] as string;
      const what = things[(index + 2 * turn) % 5] as string;
      return {
        speaker: who,
        text:
          turn % 2 === 0
            ? `${who} moved to ${where} with a ${what}`
            : `${who} keeps the ${what} in ${where}, ${index + turn} days now`,
      };
    }),
  }));
}

async function open(t: TestContext) {
  const path = join(tempDir(t), "store");
  const memory = await Memory.open({
    path,
    models: createHashModels(),
    ownsModels: true,
    now: () => clock,
    // Tight bounds, so twelve sessions reach them and maintenance consolidates across sessions.
    maintenance: { bounds: { entries: 6, pages: 2, tokens: 600, bytes: 60_000 } },
  });
  t.after(() => memory.close());
  return { memory, path };
}

/** The index as a reader sees it, raw nodes named by session key and turn instead of their ids. */
async function indexShape(memory: Memory) {
  const names = new Map<string, string>();
  for (const session of await memory.listSessions(scope)) {
    for (const node of await memory.listRawNodes(scope, session.id)) names.set(node.id, `${session.key}#${node.turn}`);
  }
  const entries = await memory.listEntries(scope);
  return entries
    .map((entry) => ({
      status: entry.status,
      routingText: entry.routingText,
      pointers: entry.pointers.map((id) => names.get(id) ?? id),
    }))
    .sort((a, b) => a.pointers.join().localeCompare(b.pointers.join()) || a.status.localeCompare(b.status));
}

describe("Memory.addSessions", () => {
  it("plans every session in order as addSession would: the same index, actions and search results", async (t) => {
    const one = await open(t);
    const batched = await open(t);
    const alone = [];
    for (const session of sessions()) alone.push(await one.memory.addSession(scope, session));
    const inBatches = [
      ...(await batched.memory.addSessions(scope, sessions().slice(0, 5))),
      ...(await batched.memory.addSessions(scope, sessions().slice(5))),
    ];
    assert.deepEqual(
      inBatches.map((result) => [result.sessionKey, result.duplicate, result.maintenance, result.rawNodeIds.length]),
      alone.map((result) => [result.sessionKey, result.duplicate, result.maintenance, result.rawNodeIds.length]),
    );
    const actions = alone.flatMap((result) => result.maintenance.actions);
    assert.ok(new Set(actions).size >= 2, `maintenance did more than one kind of thing: ${actions.join(", ")}`);
    assert.deepEqual(await indexShape(batched.memory), await indexShape(one.memory));
    assert.deepEqual((await batched.memory.checkIndex(scope)).violations, []);
    for (const query of ["where does Ana keep the violin", "zeppelin in Quito", "Bo moved"]) {
      const texts = async (memory: Memory) =>
        (await memory.search(scope, query)).items.map(
          (item) => `${item.provenance.sessionKey}#${item.provenance.turn}:${item.text}`,
        );
      assert.deepEqual(await texts(batched.memory), await texts(one.memory), query);
    }
    const again = await batched.memory.addSessions(scope, sessions().slice(3, 6));
    assert.deepEqual(
      again.map((result) => result.duplicate),
      [true, true, true],
      "a batch already stored is acknowledged",
    );
  });

  it("a bad session anywhere in the batch is an InputError naming it, and nothing is written", async (t) => {
    const { memory, path } = await open(t);
    await memory.addSession(scope, sessions()[0]);
    // The WAL index (`-shm`) is shared memory that reads touch too (the batch's first sessions are
    // prepared, which reads the store): not stored content.
    const stored = () =>
      Object.fromEntries(Object.entries(snapshotTree(path)).filter(([name]) => !name.endsWith("-shm")));
    const before = stored();
    const batch: unknown[] = sessions().slice(1, 4);
    batch.splice(2, 0, { session: "broken", turns: [{ text: 42 }] });
    await assert.rejects(
      memory.addSessions(scope, batch),
      (error) => error instanceof InputError && error.field.startsWith("sessions[2]."),
    );
    assert.deepEqual(stored(), before, "the store's files are byte for byte as they were");
    await assert.rejects(memory.addSessions(scope, "not a list" as unknown as unknown[]), InputError);
    assert.deepEqual(await memory.addSessions(scope, []), []);
  });

  it("a key stored with other content refuses the whole batch, and a key given twice is one session", async (t) => {
    const { memory } = await open(t);
    const [first, second, third] = sessions();
    await memory.addSession(scope, first);
    const before = await memory.listSessions(scope);
    await assert.rejects(
      memory.addSessions(scope, [second, { ...first, turns: [{ text: "something else entirely" }] }]),
      ConflictError,
    );
    assert.deepEqual(await memory.listSessions(scope), before, "the batch's first session was not kept");
    const results = await memory.addSessions(scope, [second, third, second]);
    assert.deepEqual(
      results.map((result) => [result.sessionKey, result.duplicate]),
      [
        ["s1", false],
        ["s2", false],
        ["s1", true],
      ],
    );
    assert.deepEqual(results[2]?.rawNodeIds, results[0]?.rawNodeIds);
    assert.deepEqual((await memory.checkIndex(scope)).violations, []);
  });
});
