import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { maxCoverTerms, refreshCovers, trimCover } from "../../src/maintain/guest-cover.ts";
import { Memory, type MemoryOptions, scopedStore } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import type { IndexEntry } from "../../src/store/index-records.ts";
import { daySession, distinctTopics, tempDir } from "../support/fixtures.ts";

const scope = { tenant: "acme", user: "ana" };

async function open(t: { after: (fn: () => void) => void }, options: Partial<MemoryOptions> = {}) {
  const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels(), ...options });
  t.after(() => memory.close());
  return memory;
}

const topics = distinctTopics;

/** Two active entries on one page: six of the eight topics sit behind them as overflow fallbacks. */
const tight = { maintenance: { bounds: { entries: 2, pages: 1, tokens: 6_144, bytes: 393_216 } } };

async function indexOf(memory: Memory) {
  return [...(await memory[scopedStore](scope).readIndex({ activeOnly: false })).entries.values()];
}

function coverWords(entries: readonly IndexEntry[]): Set<string> {
  return new Set(entries.flatMap((entry) => Object.keys(entry.digest.cover?.terms ?? {})));
}

describe("guest covers: overflowed entries are reachable through a host that describes them", () => {
  it("routing one entry deep still reaches each overflowed topic, through the host whose cover names it", async (t) => {
    const memory = await open(t, tight);
    for (const [index, texts] of topics.entries())
      await memory.addSession(scope, daySession(`s${index}`, index, texts));
    const entries = await indexOf(memory);
    const active = entries.filter((entry) => entry.status === "active");
    assert.equal(active.length, 2);
    assert.ok(entries.filter((entry) => entry.status === "overflow").length >= 4, "most topics overflowed");
    // Every overflowed topic's words are in the cover of an active entry (directly or down a chain).
    const covered = coverWords(active);
    for (const word of ["kayak", "cello", "corgi", "tomatoes", "boiler", "eclipse", "wedding", "quarterly"]) {
      const own = active.some((entry) => entry.digest.keywords[word] !== undefined);
      assert.ok(own || covered.has(word), `"${word}" is described by an active entry or its cover`);
    }
    // With a single entry chosen, the one whose cover holds the question's word is the one chosen, and
    // the walk down its chain of fallbacks reaches the topic however early it overflowed.
    for (const texts of topics) {
      const pack = await memory.search(scope, texts[0], { mode: "route", routing: { entries: 1, linkDepth: 12 } });
      assert.ok(
        pack.items.some((item) => item.text === texts[0]),
        `one routed entry reaches "${texts[0]}" (${pack.items.map((item) => item.text).join(" / ")})`,
      );
    }
    // The capacity fallback chains: three levels (the default search's walk) do not reach the first topic.
    const shallow = await memory.search(scope, topics[0][0], { mode: "route", routing: { entries: 1, linkDepth: 3 } });
    assert.ok(!shallow.items.some((item) => item.text === topics[0][0]), "the first topic sits deeper than 3 links");
    assert.deepEqual((await memory.checkIndex(scope)).violations, []);
  });

  it("a forget takes the forgotten turns' words out of every cover", async (t) => {
    const memory = await open(t, tight);
    for (const [index, texts] of topics.entries())
      await memory.addSession(scope, daySession(`s${index}`, index, texts));
    assert.ok(coverWords(await indexOf(memory)).has("kayak"), "the first topic overflowed into a cover");
    await memory.forget(scope, { session: "s0" });
    const after = await indexOf(memory);
    assert.ok(!coverWords(after).has("kayak"), "no cover keeps a forgotten word");
    assert.ok(!coverWords(after).has("bled"));
    assert.ok(coverWords(after).has("cello") || after.some((entry) => entry.digest.keywords.cello !== undefined));
    assert.deepEqual((await memory.checkIndex(scope)).violations, []);
  });

  it("covers are bounded: at most maxCoverTerms terms, and trimmed to the bytes an entry may use", () => {
    const entry = (id: string, words: string[], host: string | null): IndexEntry => ({
      id,
      status: host ? "overflow" : "active",
      page: host ? null : 0,
      digest: {
        speakers: [],
        entities: {},
        keywords: Object.fromEntries(words.map((word) => [word, 1])),
        numbers: [],
        imageText: [],
        snippets: [],
        stateCues: 0,
      },
      routingText: words.join(" "),
      tokens: words.length,
      vector: new Float32Array([1, 0]),
      vectorWeight: 1,
      imageVector: null,
      imageWeight: 0,
      pointers: [`r-${id}`],
      sessions: [id],
      timeStartMs: 0,
      timeEndMs: 0,
      predecessor: null,
      host,
      lastAction: host ? "overflow" : "add",
      relation: null,
      createdMs: 0,
      updatedMs: 0,
    });
    const entries = new Map<string, IndexEntry>([["host", entry("host", ["host"], null)]]);
    for (let guest = 0; guest < 10; guest++) {
      const words = Array.from({ length: 30 }, (_, word) => `g${guest}w${word}`);
      entries.set(`g${guest}`, entry(`g${guest}`, words, "host"));
    }
    const changed = refreshCovers(entries, ["g0"]);
    assert.deepEqual(changed, ["host"]);
    const cover = entries.get("host")?.digest.cover;
    assert.ok(cover);
    assert.equal(cover.entries, 10);
    assert.equal(Object.keys(cover.terms).length, maxCoverTerms);
    assert.ok(cover.vector, "a cover carries the mean of what it covers");
    const trimmed = trimCover(cover, 400);
    assert.ok(trimmed && Buffer.byteLength(JSON.stringify(trimmed)) <= 400);
    assert.equal(trimmed.vector, undefined, "the vector goes first");
    assert.equal(trimCover(cover, 10), undefined);
    // Nothing changed, nothing to put.
    assert.deepEqual(refreshCovers(entries, ["g0"]), []);
  });
});
