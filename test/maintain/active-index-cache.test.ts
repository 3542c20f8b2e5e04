import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ActiveIndexCache, type CommitContext, commitWithMaintenance } from "../../src/maintain/commit-session.ts";
import { ComparatorJudge } from "../../src/maintain/judge.ts";
import { Ramu } from "../../src/maintain/ramu.ts";
import type { IndexState } from "../../src/store/index-records.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { ScopedStore } from "../../src/store/store.ts";
import { assertClose, base, buildSessionWrite, hour, scopeA, spaces } from "../store/conformance-support.ts";
import { tempDir } from "../support/fixtures.ts";

const maintenance = {
  bounds: { entries: 3, pages: 2, tokens: 400, bytes: 40_000 },
  candidates: 5,
  delta: 0.7,
  segmentMaxNodes: 2,
};
const topics = ["the kayak on the lake", "the violin lessons", "the teapot from Porto", "moving to Oslo"];

function context(cache: ActiveIndexCache | undefined, prefix: string): CommitContext {
  let next = 0;
  return {
    policy: new Ramu(maintenance, new ComparatorJudge()),
    config: { ...maintenance } as CommitContext["config"],
    spaces,
    newId: () => `${prefix}-${next++}`,
    now: () => base,
    activeIndex: cache,
  };
}

async function write(index: number) {
  return buildSessionWrite({
    key: `s${index}`,
    timeMs: base + index * hour,
    turns: [
      { speaker: "Ana", text: `Ana talks about ${topics[index % topics.length]}, note ${index}.` },
      { speaker: "Bo", text: `Bo answers about ${topics[(index + 1) % topics.length]} and the train.` },
      { speaker: "Ana", text: `Ana has ${index % 3} of them now, she said on day ${index}.` },
    ],
  });
}

/** Counts full index reads: what the cache exists to avoid. */
function counting(scoped: ScopedStore): { scoped: ScopedStore; reads: () => number } {
  let reads = 0;
  const proxy = new Proxy(scoped, {
    get(target, property, receiver) {
      if (property === "readIndex") {
        return (options: { activeOnly: boolean }) => {
          reads++;
          return target.readIndex(options);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { scoped: proxy, reads: () => reads };
}

function assertSameIndex(actual: IndexState, expected: IndexState, message: string): void {
  assert.equal(actual.version, expected.version, `${message}: version`);
  assert.deepEqual([...actual.entries.keys()], [...expected.entries.keys()], `${message}: entries in stored order`);
  for (const [id, want] of expected.entries) {
    const { vector, imageVector, ...fields } = actual.entries.get(id) ?? assert.fail(`${message}: ${id} missing`);
    const { vector: wantVector, imageVector: wantImage, ...wantFields } = want;
    assert.deepEqual(fields, wantFields, `${message}: entry ${id}`);
    assertClose(vector, wantVector, `${message}: vector of ${id}`);
    assertClose(imageVector, wantImage, `${message}: image vector of ${id}`);
  }
}

describe("the active index cached by a writer", () => {
  it("is read once for a run of commits, and always equals the stored index after merges and overflow", async (t) => {
    const store = await SqliteStore.open({ path: tempDir(t) });
    t.after(() => store.close());
    const { scoped, reads } = counting(store.forScope(scopeA));
    const cache = new ActiveIndexCache(4);
    const writer = context(cache, "e");
    const actions = new Set<string>();
    for (let index = 0; index < 14; index++) {
      const { plan } = await commitWithMaintenance(scoped, await write(index), writer);
      for (const audit of plan.audits) actions.add(audit.action);
      assertSameIndex(
        await cache.read(scoped),
        await store.forScope(scopeA).readIndex({ activeOnly: true }),
        `after ${index}`,
      );
    }
    assert.equal(reads(), 1, "only the first plan read the index");
    // The bounds (3 entries) force the planner past plain adds, so the copy followed real rewrites.
    assert.ok(actions.size > 1, `maintenance did more than add: ${[...actions].join(", ")}`);
  });

  it("reads the index again after another writer's commit, and plans against what that writer left", async (t) => {
    const path = tempDir(t);
    const mine = await SqliteStore.open({ path });
    const theirs = await SqliteStore.open({ path });
    t.after(async () => {
      await mine.close();
      await theirs.close();
    });
    const { scoped, reads } = counting(mine.forScope(scopeA));
    const cache = new ActiveIndexCache(4);
    const writer = context(cache, "mine");
    await commitWithMaintenance(scoped, await write(0), writer);
    await commitWithMaintenance(scoped, await write(1), writer);
    assert.equal(reads(), 1);
    // Another connection (another process, in production) commits: the copy is now stale.
    await commitWithMaintenance(theirs.forScope(scopeA), await write(2), context(undefined, "theirs"));
    await commitWithMaintenance(scoped, await write(3), writer);
    assert.equal(reads(), 2, "the version moved, so the next plan read the index again");
    const stored = await mine.forScope(scopeA).readIndex({ activeOnly: true });
    assertSameIndex(await cache.read(scoped), stored, "after the other writer");
    const pointers = [...stored.entries.values()].flatMap((entry) => entry.pointers);
    const all = await mine.forScope(scopeA).readIndex({ activeOnly: false });
    const everyPointer = new Set([...all.entries.values()].flatMap((entry) => entry.pointers));
    assert.equal(everyPointer.size, 12, "every raw node of all four sessions is reachable from the index");
    assert.ok(pointers.length > 0);
  });

  it("a plan made from a copy that went stale before it committed meets the version check and is made again", async (t) => {
    const path = tempDir(t);
    const mine = await SqliteStore.open({ path });
    const theirs = await SqliteStore.open({ path });
    t.after(async () => {
      await mine.close();
      await theirs.close();
    });
    const cache = new ActiveIndexCache(4);
    await commitWithMaintenance(mine.forScope(scopeA), await write(0), context(cache, "mine"));
    // The other writer lands between this writer's version check and its commit.
    const scoped = mine.forScope(scopeA);
    let raced = false;
    const racing = new Proxy(scoped, {
      get(target, property, receiver) {
        if (property === "commitSession") {
          return async (...args: Parameters<ScopedStore["commitSession"]>) => {
            if (!raced) {
              raced = true;
              await commitWithMaintenance(theirs.forScope(scopeA), await write(1), context(undefined, "theirs"));
            }
            return target.commitSession(...args);
          };
        }
        const value = Reflect.get(target, property, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    await commitWithMaintenance(racing, await write(2), context(cache, "mine2"));
    const stored = await mine.forScope(scopeA).readIndex({ activeOnly: true });
    assert.equal(stored.version, 3, "three commits, each bumping the version once");
    assertSameIndex(await cache.read(scoped), stored, "after the race");
    const all = await mine.forScope(scopeA).readIndex({ activeOnly: false });
    assert.equal(new Set([...all.entries.values()].flatMap((entry) => entry.pointers)).size, 9);
  });
});
