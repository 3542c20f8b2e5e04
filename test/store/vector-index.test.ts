import assert from "node:assert/strict";
import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import type { Ranked } from "../../src/core/ranked.ts";
import type { Scope } from "../../src/core/scope.ts";
import { hashTextEmbedder } from "../../src/models/hash-provider.ts";
import type { SearchFilters } from "../../src/store/records.ts";
import { SqliteStore, type SqliteStoreOptions } from "../../src/store/sqlite/sqlite-store.ts";
import { VectorIndex } from "../../src/store/vector-index.ts";
import { people, distinctSentence as sentence, tempDir } from "../support/fixtures.ts";
import { forget } from "./scoped-reads.ts";
import { buildSessionWrite, runStoreConformance, spaces } from "./store-conformance.ts";

// The whole store contract again, with every partition on the ANN path as soon as its index is built.
runStoreConformance("sqlite with the ANN index forced on", async (t) =>
  SqliteStore.open({ path: tempDir(t), vectorIndex: { minVectors: 0 } }),
);

/** The conformance helper's text space (64-d hashed n-grams). */
const space = "text:conformance-hash-64";
const embedder = hashTextEmbedder(64);
const ana: Scope = { tenant: "acme", user: "ana" };
const bo: Scope = { tenant: "acme", user: "bo" };

async function commitSessions(
  store: SqliteStore,
  scope: Scope,
  options: { sessions: number; turns: number; firstSession?: number; speaker?: (turn: number) => string },
) {
  const rawNodeIds: string[] = [];
  const first = options.firstSession ?? 0;
  for (let session = first; session < first + options.sessions; session++) {
    const write = await buildSessionWrite({
      key: `s${session}`,
      timeMs: Date.parse("2024-01-01T00:00:00Z") + session * 3_600_000,
      turns: Array.from({ length: options.turns }, (_, turn) => ({
        speaker: options.speaker?.(turn) ?? (people[turn % people.length] as string),
        text: sentence(session * options.turns + turn),
      })),
    });
    rawNodeIds.push(...(await store.forScope(scope).commitSession(write)).rawNodeIds);
  }
  return rawNodeIds;
}

async function embed(text: string): Promise<Float32Array> {
  const [vector] = await embedder.embed([text]);
  assert.ok(vector);
  return vector;
}

async function open(t: TestContext, path: string, options: Partial<SqliteStoreOptions> = {}) {
  const store = await SqliteStore.open({ path, vectorIndex: { minVectors: 0 }, ...options });
  t.after(() => store.close());
  return store;
}

/** A second connection that never uses the ANN: the reference answers. */
async function exactTwin(t: TestContext, path: string) {
  return open(t, path, { vectorIndex: { minVectors: Number.POSITIVE_INFINITY } });
}

async function search(store: SqliteStore, scope: Scope, text: string, limit = 10, filters?: SearchFilters) {
  return store.forScope(scope).searchVectors(space, await embed(text), { limit, filters });
}

const ids = (ranked: readonly Ranked[]) => ranked.map((hit) => hit.id);

/**
 * The ANN answers like exact search up to near-ties: bf16 inside the graph moves scores by ~1e-3,
 * which may swap two rows that vec0 scores within that of each other, and nothing more.
 */
function assertSameRanking(approximate: readonly Ranked[], reference: readonly Ranked[], message: string): void {
  const tolerance = 0.01;
  assert.equal(approximate.length, reference.length, `${message}: result count`);
  approximate.forEach((hit, rank) => {
    const expected = reference[rank]?.score ?? 0;
    assert.ok(
      Math.abs(hit.score - expected) < tolerance,
      `${message}: score at rank ${rank} ${hit.score} vs ${expected}`,
    );
  });
  const cutoff = (reference.at(-1)?.score ?? 0) + tolerance;
  const found = new Set(ids(approximate));
  for (const hit of reference) {
    if (hit.score > cutoff) assert.ok(found.has(hit.id), `${message}: misses ${hit.id} (score ${hit.score})`);
  }
}
const queries = ["Ana bought the bicycle", "kayak near Oslo", "the violin on day 42", "Fay lost the lamp", "teapot"];

describe("VectorIndex", () => {
  it("keeps identical vectors in one node and answers every rowid under it", (t) => {
    const hnsw = { connectivity: 4, expansionAdd: 16, expansionSearch: 16, quantization: "f32" as const };
    const index = VectorIndex.create(2, hnsw);
    const same = new Float32Array([0.6, 0.8]);
    index.upsert([1, 2, 3], new Float32Array([...same, ...same, ...same]));
    index.upsert([4], new Float32Array([1, 0]));
    index.upsert([5], same);
    assert.equal(index.size, 5);
    const rowidsNear = (k: number) => index.search(same, k).map((hit) => hit.rowid);
    assert.deepEqual(rowidsNear(4), [1, 2, 3, 5]);
    index.remove([1, 5]);
    assert.deepEqual(rowidsNear(4), [2, 3, 4]);

    const path = join(tempDir(t), "index.usearch");
    index.save(path);
    const loaded = VectorIndex.load(path, { dimensions: 2, hnsw, maxRowid: index.maxRowid });
    assert.equal(loaded.size, 3);
    assert.deepEqual(
      loaded.search(same, 4).map((hit) => hit.rowid),
      [2, 3, 4],
    );
    loaded.remove([2, 3]);
    assert.deepEqual(
      loaded.search(same, 4).map((hit) => hit.rowid),
      [4],
    );
  });

  it("replaces a vector under a reused rowid and forgets removed ones", () => {
    const hnsw = { connectivity: 8, expansionAdd: 32, expansionSearch: 32, quantization: "f32" as const };
    const index = VectorIndex.create(2, hnsw);
    const query = new Float32Array([0.6, 0.8]);
    index.upsert([1, 2], new Float32Array([1, 0, 0, 1]));
    assert.deepEqual(
      index.search(query, 2).map((hit) => hit.rowid),
      [2, 1],
    );
    index.upsert([1], query);
    assert.equal(index.size, 2);
    assert.deepEqual(
      index.search(query, 2).map((hit) => hit.rowid),
      [1, 2],
    );
    index.remove([1]);
    assert.deepEqual(
      index.search(query, 2).map((hit) => hit.rowid),
      [2],
    );
    assert.equal(index.maxRowid, 2);
  });

  it("searches with a size step's larger ef_search once the graph reaches it, and finds more of the true nearest", (t) => {
    // A sparse graph over random 32-d vectors (M 8, ef_construction 16): at ef_search 10 it misses about half the true top 10.
    const hnsw = { connectivity: 8, expansionAdd: 16, expansionSearch: 10, quantization: "f32" as const };
    const dimensions = 32;
    const count = 3_000;
    let seed = 17;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31 - 0.5;
    };
    const vectors = Float32Array.from({ length: count * dimensions }, random);
    const built = VectorIndex.create(dimensions, hnsw);
    built.upsert(
      Array.from({ length: count }, (_, row) => row + 1),
      vectors,
    );
    const path = join(tempDir(t), "steps.usearch");
    built.save(path);
    const open = (steps: readonly (readonly [number, number])[]) =>
      VectorIndex.load(path, { dimensions, hnsw: { ...hnsw, expansionSearchSteps: steps }, maxRowid: count });
    const queries = Array.from({ length: 40 }, () => Float32Array.from({ length: dimensions }, random));
    const exactTop = (query: Float32Array) => {
      const scored = Array.from({ length: count }, (_, row) => {
        let dot = 0;
        let norm = 0;
        for (let d = 0; d < dimensions; d++) {
          const value = vectors[row * dimensions + d] as number;
          dot += value * (query[d] as number);
          norm += value * value;
        }
        return { rowid: row + 1, score: dot / Math.sqrt(norm) };
      });
      return new Set(
        scored
          .sort((a, b) => b.score - a.score)
          .slice(0, 10)
          .map((hit) => hit.rowid),
      );
    };
    const truth = queries.map(exactTop);
    const recall = (index: VectorIndex) =>
      queries.reduce((sum, query, position) => {
        const found = index.search(query, 10).slice(0, 10);
        return sum + found.filter((hit) => truth[position]?.has(hit.rowid)).length / 10;
      }, 0) / queries.length;

    const plain = open([]);
    const stepped = open([[1_000, 400]]);
    const notReached = open([[count + 1, 400]]);
    assert.equal(stepped.steppedExpansion, 400);
    assert.equal(notReached.steppedExpansion, 0);
    const plainRecall = recall(plain);
    assert.ok(recall(stepped) >= 0.95, `recall@10 with the step ${recall(stepped)}`);
    assert.ok(recall(stepped) > plainRecall + 0.2, `step ${recall(stepped)} against ${plainRecall} without`);
    assert.equal(recall(notReached), plainRecall, "a step the graph has not reached changes nothing");
    // The step searches exactly as an index opened with that ef_search does.
    const opened = VectorIndex.load(path, { dimensions, hnsw: { ...hnsw, expansionSearch: 400 }, maxRowid: count });
    for (const query of queries) {
      assert.deepEqual(
        stepped.search(query, 10).map((hit) => hit.rowid),
        opened.search(query, 10).map((hit) => hit.rowid),
      );
    }
    assert.ok(stepped.search(queries[0] as Float32Array, 10).length === 10, "still k results, not the candidate list");
  });
});

describe("ANN vector search (SQLite)", () => {
  it("answers like exact vec0 search when forced on for a small partition", async (t) => {
    const dir = tempDir(t);
    const store = await open(t, dir);
    await commitSessions(store, ana, { sessions: 12, turns: 25 });
    assert.equal(store.vectorIndexes.status(space, ana).state, "exact", "nothing is built before a search asks");
    await store.vectorIndexes.ready(space, ana);
    assert.deepEqual(store.vectorIndexes.status(space, ana), {
      state: "ready",
      vectors: 300,
      indexed: 300,
      error: null,
    });

    const exact = await exactTwin(t, dir);
    for (const query of queries) {
      assertSameRanking(await search(store, ana, query), await search(exact, ana, query), `top-10 for "${query}"`);
    }
  });

  it("keeps a loaded index up to date with new commits", async (t) => {
    const store = await open(t, tempDir(t));
    await commitSessions(store, ana, { sessions: 4, turns: 10 });
    await store.vectorIndexes.ready(space, ana);
    const [added] = await commitSessions(store, ana, { sessions: 1, turns: 1, firstSession: 99 });
    assert.equal(store.vectorIndexes.status(space, ana).indexed, 41);
    assert.equal(ids(await search(store, ana, sentence(99), 1))[0], added);
  });

  it("never returns a forgotten raw node, before or after a reopen", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir, vectorIndex: { minVectors: 0 } });
    const rawNodeIds = await commitSessions(store, ana, { sessions: 6, turns: 20 });
    await store.vectorIndexes.ready(space, ana);
    await store.close();
    const annFiles = readdirSync(join(dir, "ann"));
    assert.deepEqual(annFiles.map((name) => name.replace(/-[0-9a-f]+\./, "-<scope>.")).sort(), [
      "vec_1-<scope>.json",
      "vec_1-<scope>.usearch",
      "vec_1-<scope>.usearch.keys",
    ]);

    const reopened = await open(t, dir);
    await reopened.vectorIndexes.ready(space, ana);
    const victim = rawNodeIds[17] as string;
    const victimText = sentence(17);
    assert.equal(ids(await search(reopened, ana, victimText, 1))[0], victim, "found before the forget");
    await forget(reopened.forScope(ana), { rawNode: victim }, spaces);
    assert.deepEqual(readdirSync(join(dir, "ann")), [], "the forget deleted the persisted index at once");
    assert.ok(!ids(await search(reopened, ana, victimText, 50)).includes(victim), "gone from the loaded index");
    await forget(reopened.forScope(ana), { session: "s3" }, spaces);
    const sessionThree = rawNodeIds.slice(60, 80);
    for (const query of [victimText, sentence(65), sentence(79)]) {
      const found = ids(await search(reopened, ana, query, 120));
      assert.ok(!found.includes(victim) && !sessionThree.some((id) => found.includes(id)), `"${query}"`);
    }
    await reopened.close();

    const third = await open(t, dir);
    assert.equal(third.vectorIndexes.status(space, ana).state, "exact");
    await third.vectorIndexes.ready(space, ana);
    assert.equal(third.vectorIndexes.status(space, ana).indexed, 99, "rebuilt from vec0 without the forgotten rows");
    assert.ok(!ids(await search(third, ana, victimText, 120)).includes(victim));
  });

  it("rebuilds when the index file is deleted", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir, vectorIndex: { minVectors: 0 } });
    await commitSessions(store, ana, { sessions: 5, turns: 20 });
    await store.vectorIndexes.ready(space, ana);
    await store.close();
    const [indexFile] = readdirSync(join(dir, "ann")).filter((name) => name.endsWith(".usearch"));
    assert.ok(indexFile);
    rmSync(join(dir, "ann", indexFile));

    const reopened = await open(t, dir);
    const exact = await exactTwin(t, dir);
    // The first search starts the rebuild and is answered exactly meanwhile.
    assert.deepEqual(
      ids(await search(reopened, ana, queries[0] as string)),
      ids(await search(exact, ana, queries[0] as string)),
    );
    assert.equal(reopened.vectorIndexes.status(space, ana).state, "building");
    await reopened.vectorIndexes.ready(space, ana);
    assert.equal(reopened.vectorIndexes.status(space, ana).indexed, 100);
    for (const query of queries) {
      assertSameRanking(await search(reopened, ana, query), await search(exact, ana, query), `"${query}"`);
    }
  });

  it("catches a persisted index up with rows committed while it was not loaded", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir, vectorIndex: { minVectors: 0 } });
    await commitSessions(store, ana, { sessions: 3, turns: 20 });
    await store.vectorIndexes.ready(space, ana);
    await store.close();
    // As after a crash between a commit and the index's save: the manifest is behind the database.
    const writer = await SqliteStore.open({ path: dir, vectorIndex: { minVectors: Number.POSITIVE_INFINITY } });
    const [late] = await commitSessions(writer, ana, { sessions: 1, turns: 5, firstSession: 50 });
    await writer.close();

    const reopened = await open(t, dir);
    assert.equal(ids(await search(reopened, ana, sentence(250), 1))[0], late);
    assert.deepEqual(reopened.vectorIndexes.status(space, ana), {
      state: "ready",
      vectors: 65,
      indexed: 65,
      error: null,
    });
  });

  it("rebuilds instead of trusting a manifest that is stale, torn or made with other settings", async (t) => {
    const dir = tempDir(t);
    const store = await SqliteStore.open({ path: dir, vectorIndex: { minVectors: 0 } });
    await commitSessions(store, ana, { sessions: 2, turns: 20 });
    await store.vectorIndexes.ready(space, ana);
    await store.close();
    const [manifest] = readdirSync(join(dir, "ann")).filter((name) => name.endsWith(".json"));
    assert.ok(manifest);

    const otherSettings = await open(t, dir, {
      vectorIndex: {
        minVectors: 0,
        hnsw: { connectivity: 8, expansionAdd: 64, expansionSearch: 64, quantization: "f32" },
      },
    });
    await search(otherSettings, ana, "teapot");
    assert.equal(otherSettings.vectorIndexes.status(space, ana).state, "building", "other HNSW settings: rebuilt");
    await otherSettings.vectorIndexes.ready(space, ana);
    await otherSettings.close();

    writeFileSync(join(dir, "ann", manifest), "{ torn");
    const torn = await open(t, dir);
    await search(torn, ana, "teapot");
    assert.equal(torn.vectorIndexes.status(space, ana).state, "building", "unreadable manifest: rebuilt");
    await torn.vectorIndexes.ready(space, ana);
    assert.equal(torn.vectorIndexes.status(space, ana).indexed, 40);
  });

  it("keeps one index per scope and never mixes scopes", async (t) => {
    const dir = tempDir(t);
    const store = await open(t, dir);
    const anaIds = await commitSessions(store, ana, { sessions: 3, turns: 20 });
    // Bo says the very same sentences: only the scope tells the rows apart.
    const boIds = await commitSessions(store, bo, { sessions: 3, turns: 20 });
    await store.vectorIndexes.ready(space, ana);
    await store.vectorIndexes.ready(space, bo);
    for (const query of queries) {
      const forAna = ids(await search(store, ana, query, 60));
      const forBo = ids(await search(store, bo, query, 60));
      assert.ok(forAna.length > 0 && forAna.every((id) => anaIds.includes(id)), `ana: "${query}"`);
      assert.ok(forBo.length > 0 && forBo.every((id) => boIds.includes(id)), `bo: "${query}"`);
    }
    await forget(store.forScope(bo), { all: true }, spaces);
    assert.deepEqual(await search(store, bo, "teapot"), []);
    assert.ok((await search(store, ana, "teapot")).length > 0, "forgetting bo leaves ana's index alone");
    assert.ok(existsSync(join(dir, "ann")));
  });

  it("filters ANN candidates, falling back to exact vec0 when too few survive", async (t) => {
    const dir = tempDir(t);
    const store = await open(t, dir);
    await commitSessions(store, ana, { sessions: 10, turns: 20, speaker: (turn) => (turn === 7 ? "Zed" : "Ana") });
    await store.vectorIndexes.ready(space, ana);
    const exact = await exactTwin(t, dir);
    const cases: SearchFilters[] = [
      { speakers: ["Ana"] },
      // Ten rows in two hundred: the over-fetched ANN candidates rarely hold ten of them.
      { speakers: ["Zed"] },
      { sessionKeys: ["s4"] },
      { timeFromMs: Date.parse("2024-01-01T05:00:00Z"), timeToMs: Date.parse("2024-01-01T06:30:00Z") },
    ];
    for (const filters of cases) {
      for (const query of queries) {
        const approximate = await search(store, ana, query, 10, filters);
        const reference = await search(exact, ana, query, 10, filters);
        assertSameRanking(approximate, reference, `"${query}" with ${JSON.stringify(filters)}`);
      }
    }
  });
});
