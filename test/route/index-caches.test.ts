import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Memory, scopedStore } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { LinkedEntriesCache } from "../../src/route/index-caches.ts";
import type { IndexEntry } from "../../src/store/index-records.ts";
import type { ScopedStore } from "../../src/store/store.ts";
import { daySession, distinctTopics, tempDir } from "../support/fixtures.ts";

const scope = { tenant: "acme", user: "ana" };
/** Two active entries on one page: most topics overflow behind them, in chains of hosts. */
const tight = { maintenance: { bounds: { entries: 2, pages: 1, tokens: 6_144, bytes: 393_216 } } };

async function filled(t: { after: (fn: () => void) => void }) {
  const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels(), ...tight });
  t.after(() => memory.close());
  for (const [index, texts] of distinctTopics.entries())
    await memory.addSession(scope, daySession(`s${index}`, index, texts));
  return memory;
}

/** The scoped store with its linked-entry reads counted. */
function counted(store: ScopedStore): { store: ScopedStore; reads: () => number } {
  let reads = 0;
  const wrapped = Object.create(store) as ScopedStore;
  Object.defineProperty(wrapped, "readLinkedEntries", {
    value: (options: Parameters<ScopedStore["readLinkedEntries"]>[0]) => {
      reads++;
      return store.readLinkedEntries(options);
    },
  });
  Object.defineProperty(wrapped, "scope", { value: store.scope });
  return { store: wrapped, reads: () => reads };
}

const ids = (entries: readonly IndexEntry[]) => entries.map((entry) => entry.id).sort();

async function layout(memory: Memory) {
  const store = memory[scopedStore](scope);
  const state = await store.readIndex({ activeOnly: false });
  const entries = [...state.entries.values()];
  const hosts = [...new Set(entries.flatMap((entry) => (entry.host ? [entry.host] : [])))];
  const predecessors = entries.flatMap((entry) => (entry.predecessor ? [entry.predecessor] : []));
  const probe = entries.find((entry) => entry.status === "active")?.vector as Float32Array;
  return { store, version: state.version, entries, hosts, predecessors, probe };
}

describe("linked entries cached between searches", () => {
  it("answers as the store does, and reads each host's guests from the store once per index version", async (t) => {
    const memory = await filled(t);
    const { store, version, hosts, entries } = await layout(memory);
    assert.ok(hosts.length >= 2, "the tight bounds made hosts with guests");
    const named = [entries[0]?.id as string, "ent_missing"];
    const { store: countedStore, reads } = counted(store);
    const reader = new LinkedEntriesCache(1_000, 8).reader(countedStore, version);
    const everything = await store.readLinkedEntries({ hosts, ids: named });
    assert.deepEqual(ids(await reader({ hosts, ids: named })), ids(everything), "same entries as the store");
    // The nearest-guest preselection: a guest's own vector finds that guest first under its host, and
    // every other host keeps only its `perHost` nearest; a `perHost` above every host's guests keeps all.
    const guest = entries.find((entry) => entry.status === "overflow" && entry.host) as IndexEntry;
    const one = await reader({ hosts, ids: named, nearest: { vector: guest.vector, perHost: 1 } });
    assert.ok(ids(one).includes(guest.id), "the guest nearest its own vector is kept");
    for (const host of hosts)
      assert.ok(
        one.filter((entry) => entry.host === host && !named.includes(entry.id)).length <= 1,
        `one guest of ${host}`,
      );
    assert.ok(one.length < everything.length, "the preselection left guests out");
    const all = await reader({ hosts, ids: named, nearest: { vector: guest.vector, perHost: 16 } });
    assert.deepEqual(ids(all), ids(everything));
    assert.equal(reads(), 1, "one store read for the hosts and ids, then answers from the cache");
    // A subset of hosts asked again: still no store read.
    await reader({ hosts: hosts.slice(0, 1), ids: [] });
    assert.equal(reads(), 1);
  });

  it("drops a scope's entries when the index version moves, and after drop()", async (t) => {
    const memory = await filled(t);
    const { store, version, hosts } = await layout(memory);
    const cache = new LinkedEntriesCache(1_000, 8);
    const { store: countedStore, reads } = counted(store);
    await cache.reader(countedStore, version)({ hosts, ids: [] });
    assert.ok(cache.size > 0);
    await memory.addSession(scope, daySession("later", 40, ["We adopted a second corgi called Mochi."]));
    const after = await layout(memory);
    assert.ok(after.version > version);
    const fresh = await cache.reader(countedStore, after.version)({ hosts: after.hosts, ids: [] });
    assert.equal(reads(), 2, "a new version reads again");
    assert.deepEqual(ids(fresh), ids(await store.readLinkedEntries({ hosts: after.hosts, ids: [] })));
    cache.drop(countedStore);
    assert.equal(cache.size, 0);
  });

  it("holds no more entries than its capacity, and still answers in full beyond it", async (t) => {
    const memory = await filled(t);
    const { store, version, hosts, probe } = await layout(memory);
    const guests = await store.readLinkedEntries({ hosts, ids: [] });
    assert.ok(guests.length > 3);
    const cache = new LinkedEntriesCache(3, 8);
    const reader = cache.reader(store, version);
    for (let round = 0; round < 2; round++) {
      assert.deepEqual(ids(await reader({ hosts, ids: [] })), ids(guests));
      assert.ok(cache.size <= 3, `holds ${cache.size} entries`);
      // Each host keeps one guest, and the same one whether it came from a crowded cache or a fresh one.
      const nearest = { vector: probe, perHost: 1 };
      const kept = await reader({ hosts, ids: [], nearest });
      assert.equal(kept.length, new Set(kept.map((entry) => entry.host)).size, "one guest a host");
      assert.deepEqual(
        ids(await new LinkedEntriesCache(1_000, 8).reader(store, version)({ hosts, ids: [], nearest })),
        ids(kept),
      );
    }
  });

  it("a forget leaves no cached entry behind, and searches after it read the new index", async (t) => {
    const memory = await filled(t);
    const before = await memory.search(scope, "kayak Lake Bled", { mode: "route", routing: { linkDepth: 12 } });
    assert.ok(before.items.some((item) => item.text.includes("kayak")));
    await memory.forget(scope, { session: "s0" });
    const after = await memory.search(scope, "kayak Lake Bled", { mode: "route", routing: { linkDepth: 12 } });
    assert.ok(!after.items.some((item) => item.text.includes("kayak")), "the forgotten session is not read");
    assert.deepEqual((await memory.checkIndex(scope)).violations, []);
  });
});
