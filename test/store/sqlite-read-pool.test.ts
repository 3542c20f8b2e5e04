import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { CairnError } from "../../src/core/errors.ts";
import type { Scope } from "../../src/core/scope.ts";
import type { EvidencePack } from "../../src/evidence/evidence-pack.ts";
import type { SessionInput } from "../../src/ingest/session-input.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { people, distinctSentence as sentence, tempDir } from "../support/fixtures.ts";
import { channelIndexConformance } from "./channel-index-conformance.ts";

const ana: Scope = { tenant: "acme", user: "ana" };
const rival: Scope = { tenant: "globex", user: "ana" };
const models = createHashModels();

function session(key: string, index: number, texts?: readonly string[]): SessionInput {
  return {
    session: key,
    time: new Date(Date.parse("2024-01-01T00:00:00Z") + index * 3_600_000).toISOString(),
    turns: (texts ?? [0, 1, 2, 3].map((turn) => sentence(index * 4 + turn))).map((text, turn) => ({
      speaker: people[turn % people.length] as string,
      text,
    })),
  };
}

const queries = ["kayak near Oslo", "who repaired the telescope", "Chen sold the violin", "day 17", "lamp at the gym"];
const modes = ["cairn", "tri-path", "route"] as const;

/** A pack without its timings: what a caller reads, to compare across the two paths. */
function comparable(pack: EvidencePack) {
  const { timings: _timings, ...rest } = pack;
  return rest;
}

async function openMemory(path: string, readWorkers: number): Promise<{ memory: Memory; store: SqliteStore }> {
  // minVectors 0: every partition goes through its ANN index, the part of a worker that must follow the writes.
  const store = await SqliteStore.open({ path, readWorkers, vectorIndex: { minVectors: 0 } });
  return { memory: await Memory.open({ store, models }), store };
}

describe("SQLite read pool", () => {
  const root = mkdtempSync(join(tmpdir(), "cairn-read-pool-"));
  const path = join(root, "store");
  let pooled: { memory: Memory; store: SqliteStore };

  before(async () => {
    const { memory, store } = await openMemory(path, 0);
    for (let index = 0; index < 30; index++) await memory.addSession(ana, session(`s${index}`, index));
    for (let index = 0; index < 10; index++) await memory.addSession(rival, session(`r${index}`, index));
    // Persisted at close: both paths then load the same HNSW files, so their answers can be compared exactly.
    await store.vectorIndexes.ready(memory.spaces.text.name, ana);
    await memory.close();
    pooled = await openMemory(path, 2);
  });
  after(async () => {
    await pooled?.memory.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("answers every search mode exactly as the calling thread does: items, scores, order", async () => {
    assert.equal(pooled.store.readWorkers, 2);
    const answers = async (memory: Memory) => {
      const packs = [];
      for (const mode of modes)
        for (const query of queries) packs.push(comparable(await memory.search(ana, query, { mode })));
      return packs;
    };
    const fromPool = await answers(pooled.memory);
    const inline = await openMemory(path, 0);
    try {
      const fromThread = await answers(inline.memory);
      assert.deepEqual(fromPool, fromThread);
      assert.ok(fromPool.every((pack) => pack.items.length > 0));
    } finally {
      await inline.memory.close();
    }
  });

  it("runs one search's passes in both workers at once and keeps each scope's rows to itself", async () => {
    const rivalIds = new Set(
      (await pooled.memory.search(rival, "kayak", { mode: "tri-path" })).items.map((item) => item.rawNodeId),
    );
    assert.ok(rivalIds.size > 0);
    const scoped = pooled.store.forScope(ana);
    const vector = (await models.text.embed(["kayak near Oslo"]))[0] as Float32Array;
    // Four calls at once: the pool spreads them over both workers.
    const answers = await Promise.all([
      scoped.searchLexical("text", "kayak", { limit: 50 }),
      scoped.searchVectors(pooled.memory.spaces.text.name, vector, { limit: 50 }),
      scoped.searchLexical("text", "Oslo", { limit: 50 }),
      scoped.searchVectors(pooled.memory.spaces.text.name, vector, { limit: 50 }),
    ]);
    for (const ranked of answers) {
      assert.ok(ranked.length > 0);
      assert.ok(
        ranked.every((hit) => !rivalIds.has(hit.id)),
        "a pooled search of one tenant returned another's raw node",
      );
    }
    assert.deepEqual(await scoped.readRawNodes({ ids: [...rivalIds] }), []);
  });

  it("sees a write acknowledged before the search, and never a raw node forgotten before it", async () => {
    const space = pooled.memory.spaces.text.name;
    const text = "Zephyrine calibrated the astrolabe beside the lighthouse";
    const vector = (await models.text.embed([text]))[0] as Float32Array;
    const scoped = pooled.store.forScope(ana);
    // Both workers have their indexes loaded before the write.
    await Promise.all([0, 1].map(() => scoped.searchVectors(space, vector, { limit: 1 })));
    const added = await pooled.memory.addSession(ana, session("fresh", 100, [text]));
    const [id] = added.rawNodeIds;
    for (let round = 0; round < 2; round++) {
      const [dense, lexical] = await Promise.all([
        scoped.searchVectors(space, vector, { limit: 1 }),
        scoped.searchLexical("text", "astrolabe", { limit: 5 }),
      ]);
      assert.equal(dense[0]?.id, id);
      assert.deepEqual(
        lexical.map((hit) => hit.id),
        [id],
      );
    }
    assert.equal((await pooled.memory.search(ana, "astrolabe lighthouse")).items[0]?.rawNodeId, id);

    await pooled.memory.forget(ana, { session: "fresh" });
    for (let round = 0; round < 2; round++) {
      const [dense, lexical] = await Promise.all([
        scoped.searchVectors(space, vector, { limit: 5 }),
        scoped.searchLexical("text", "astrolabe", { limit: 5 }),
      ]);
      assert.ok(dense.every((hit) => hit.id !== id));
      assert.deepEqual(lexical, []);
    }
    const pack = await pooled.memory.search(ana, "astrolabe lighthouse");
    assert.ok(pack.items.every((item) => item.rawNodeId !== id));
  });

  it("sees what another process's connection committed after its workers loaded their indexes", async () => {
    const space = pooled.memory.spaces.text.name;
    const text = "Quillon tuned the harpsichord in the observatory";
    const vector = (await models.text.embed([text]))[0] as Float32Array;
    const scoped = pooled.store.forScope(ana);
    await Promise.all([0, 1].map(() => scoped.searchVectors(space, vector, { limit: 1 })));
    const other = await openMemory(path, 0);
    let id: string | undefined;
    try {
      [id] = (await other.memory.addSession(ana, session("elsewhere", 200, [text]))).rawNodeIds;
    } finally {
      await other.memory.close();
    }
    const dense = await Promise.all([0, 1].map(() => scoped.searchVectors(space, vector, { limit: 1 })));
    assert.deepEqual(
      dense.map((ranked) => ranked[0]?.id),
      [id, id],
    );
  });

  it("gives a typed error for a failing read, as the calling thread does", async () => {
    const wrong = new Float32Array(3);
    const inline = await openMemory(path, 0);
    try {
      const expected = await inline.store
        .forScope(ana)
        .searchVectors(pooled.memory.spaces.text.name, wrong, { limit: 1 })
        .then(
          () => assert.fail("a 3-d query in a 256-d space was accepted"),
          (error: unknown) => error,
        );
      await assert.rejects(
        pooled.store.forScope(ana).searchVectors(pooled.memory.spaces.text.name, wrong, { limit: 1 }),
        (error) => {
          assert.ok(CairnError.is(error));
          assert.equal(error.code, "store");
          assert.equal(error.message, (expected as Error).message);
          return true;
        },
      );
    } finally {
      await inline.memory.close();
    }
  });

  it("fails the calls of a worker that dies with a typed error and replaces it", async () => {
    const scoped = pooled.store.forScope(ana);
    const [first] = pooled.store.readPoolThreads;
    assert.ok(first);
    // The first worker is told to stop, then two calls go out at once, one to each worker: the one
    // sent to the stopping worker is never answered (a thread that died with calls queued).
    const stopping = first.terminate();
    const calls = [
      scoped.searchLexical("text", "kayak", { limit: 5 }),
      scoped.searchLexical("text", "kayak", { limit: 5 }),
    ];
    await stopping;
    const settled = await Promise.allSettled(calls);
    const failed = settled.filter((result) => result.status === "rejected");
    assert.equal(failed.length, 1);
    const reason = (failed[0] as PromiseRejectedResult).reason;
    assert.ok(CairnError.is(reason) && reason.code === "store", String(reason));
    assert.match(reason.message, /read worker stopped/);
    for (let waited = 0; pooled.store.readPoolThreads.includes(first) || pooled.store.readWorkers < 2; waited += 50) {
      assert.ok(waited < 20_000, "the stopped worker was not replaced");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const again = await Promise.all([0, 1, 2].map(() => scoped.searchLexical("text", "kayak", { limit: 5 })));
    assert.ok(again.every((ranked) => ranked.length > 0));
  });

  it("lets the process exit once the memory is closed", { timeout: 60_000 }, async () => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", fileURLToPath(new URL("../support/read-pool-child.ts", import.meta.url)), path],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    assert.equal(code, 0);
    assert.match(output, /closed after \d+ item\(s\) from 2 worker\(s\)/);
  });
});

// The channel-index conformance group again, with every BM25 and vector pass answered by a worker.
describe("Store conformance (channel index): sqlite with a read pool", () => {
  for (const testCase of channelIndexConformance.cases) {
    it(testCase.name, async (t) => {
      const stores: SqliteStore[] = [];
      const another = async () => {
        const store = await SqliteStore.open({ path: tempDir(t), readWorkers: 2 });
        stores.push(store);
        return store;
      };
      try {
        await testCase.run(await another(), t, another);
      } finally {
        for (const store of stores) await store.close();
      }
    });
  }
});
