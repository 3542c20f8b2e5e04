import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { BenchDataset } from "../../src/bench/dataset.ts";
import { benchMethods } from "../../src/bench/methods/index.ts";
import { runBench } from "../../src/bench/run-bench.ts";
import { defaultBudget } from "../../src/evidence/budget.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { defaultSearchConfig } from "../../src/route/search-config.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";

/** Two small histories with known gold: an old fact, a recent fact, an image turn, and an empty-gold question. */
async function smallDataset(dir: string): Promise<BenchDataset> {
  writeFile(dir, "bike.png", await drawPng({ shape: "circle", color: "#c00" }));
  const filler = (prefix: string, count: number) =>
    Array.from({ length: count }, (_, index) => ({
      speaker: index % 2 ? "Bo" : "Al",
      text: `${prefix} small talk number ${index} about weather and lunch plans`,
      metadata: { datasetTurnId: `${prefix}:${index + 10}` },
    }));
  const history = (id: string) => ({
    id,
    baseDir: dir,
    sessions: [
      {
        session: "D1",
        time: "2024-01-01T10:00:00Z",
        turns: [
          {
            speaker: "Al",
            text: "My sister Maribel moved to Valparaiso last spring.",
            metadata: { datasetTurnId: "D1:1" },
          },
          {
            speaker: "Bo",
            text: "Look at my new ride",
            images: [{ path: "bike.png", caption: "a red tandem bicycle" }],
            metadata: { datasetTurnId: "D1:2", datasetImageIds: ["D1:IMG_1"] },
          },
          ...filler("D1", 20),
        ],
      },
      {
        session: "D2",
        time: "2024-03-01T10:00:00Z",
        turns: [
          ...filler("D2", 20),
          {
            speaker: "Al",
            text: "The pottery class starts on Thursday evenings.",
            metadata: { datasetTurnId: "D2:99" },
          },
        ],
      },
    ],
    questions: [
      {
        id: `${id}:q1`,
        text: "Where did Maribel move?",
        category: "single-hop",
        gold: { turns: ["D1:1"], sessions: ["D1"], images: [] },
      },
      {
        id: `${id}:q2`,
        text: "What does the tandem bicycle look like?",
        category: "visual",
        gold: { turns: ["D1:2"], sessions: ["D1"], images: ["D1:IMG_1"] },
      },
      {
        id: `${id}:q3`,
        text: "When is the pottery class?",
        category: "single-hop",
        gold: { turns: ["D2:99"], sessions: ["D2"], images: [] },
      },
      {
        id: `${id}:q4`,
        text: "What is Al's favourite film?",
        category: "adversarial",
        gold: { turns: [], sessions: [], images: [] },
      },
    ],
  });
  return { name: "tiny", histories: [history("h1"), history("h2")], notes: ["generated for tests"] };
}

describe("evaluation harness", () => {
  it("replays, asks every method, and scores evidence per question and category", async (t) => {
    const dataset = await smallDataset(tempDir(t));
    const results = await runBench({
      dataset,
      methods: benchMethods,
      models: createHashModels(),
      budget: { ...defaultBudget, rawNodes: 4 },
      search: defaultSearchConfig,
    });
    const by = new Map(results.map((result) => [result.method, result]));
    assert.deepEqual(
      [...by.keys()],
      benchMethods.map((method) => method.name),
    );
    const bm25 = by.get("bm25");
    const full = by.get("full-context");
    const recency = by.get("recency");
    assert.ok(bm25 && full && recency);
    assert.equal(bm25.summary.questions, 8);
    assert.equal(bm25.summary.emptyGold, 2, "empty-gold questions are reported apart");
    assert.equal(bm25.summary.recallTurn, 1, "each gold turn shares rare words with its question");
    assert.equal(full.summary.recallTurn, 1);
    assert.ok(full.summary.textTokensMean > 10 * bm25.summary.textTokensMean, "full context pays in tokens");
    assert.equal(recency.byCategory["single-hop"]?.recallTurn, 0.5, "a window of 4 keeps the recent fact only");
    const image = by.get("image")?.byCategory.visual;
    assert.equal(image?.imageHitRate, 1, "the caption leads the image channel to the picture");
    for (const result of results) {
      assert.ok(
        (result.summary.routeHit ?? 0) >= (result.summary.supportRecall ?? 0),
        `${result.method}: route ≥ support`,
      );
      assert.equal(result.ingest.rawNodes, 2 * 43);
      assert.ok(result.summary.textTokensMean >= 0 && result.summary.latencyP95Ms >= result.summary.latencyP50Ms);
    }
    const q1 = bm25.questions.find((score) => score.id === "h1:q1");
    assert.equal(q1?.retrievedTurns[0], "D1:1", "per-question output keeps the dataset's own ids");
  });

  it("is fair: every method fills the same budget, routing diagnostics only where routing ran, recall@k beside", async (t) => {
    const small = await smallDataset(tempDir(t));
    // A question that 40 filler turns of each history answer in part, so every method can fill its pack.
    const dataset = {
      ...small,
      histories: small.histories.map((history) => ({
        ...history,
        questions: [
          ...history.questions,
          {
            id: `${history.id}:q5`,
            text: "What small talk was there about weather and lunch plans?",
            category: "multi-hop",
            gold: { turns: ["D1:10", "D2:29"], sessions: ["D1", "D2"], images: [] },
          },
        ],
      })),
    };
    const results = await runBench({
      dataset,
      methods: benchMethods.filter((method) =>
        ["recency", "bm25", "dense", "tri-path", "cairn", "c3m"].includes(method.name),
      ),
      models: createHashModels(),
      // More raw nodes than M2A's ten per channel: every method must still fill the pack.
      budget: { ...defaultBudget, rawNodes: 14 },
      search: defaultSearchConfig,
    });
    const by = new Map(results.map((result) => [result.method, result]));
    for (const name of ["bm25", "dense", "tri-path", "cairn"]) {
      const result = by.get(name);
      assert.ok(result);
      const packSizes = result.questions
        .filter((score) => score.id.endsWith(":q5"))
        .map((score) => score.retrievedTurns.length);
      assert.deepEqual(packSizes, [14, 14], `${name}: a 14-node budget is filled`);
    }
    assert.equal(by.get("bm25")?.summary.routeHit, null, "a direct channel has no routed candidate set");
    assert.equal(by.get("recency")?.summary.routeHit, null, "a sliding window does not route");
    assert.equal(by.get("tri-path")?.summary.supportRecall, null);
    assert.notEqual(by.get("cairn")?.summary.routeHit ?? null, null, "the routed read reports Route-Hit");
    assert.notEqual(by.get("c3m")?.summary.supportRecall ?? null, null);
    for (const result of results) {
      const { recallAt5, recallAt10, recallAt20, mrrAt10 } = result.summary;
      assert.ok(
        typeof recallAt5 === "number" && typeof recallAt10 === "number" && typeof recallAt20 === "number",
        `${result.method}: recall@k measured`,
      );
      assert.ok(recallAt5 <= recallAt10 + 1e-9 || result.method === "cairn", `${result.method}: recall@k grows with k`);
      assert.ok(typeof mrrAt10 === "number" && mrrAt10 <= 1);
    }
    const single = by.get("bm25")?.byCategory["single-hop"];
    assert.equal(single?.recallAt5, 1, "rare words put each gold turn first");
    assert.equal(single?.mrrAt10, 1);
  });

  it("is query-blind: every session of a history is written before its first question is asked", async (t) => {
    const dataset = await smallDataset(tempDir(t));
    const events: string[] = [];
    const questionTexts = new Set(
      dataset.histories.flatMap((history) => history.questions.map((question) => question.text)),
    );
    const addSession = Memory.prototype.addSession;
    const search = Memory.prototype.search;
    t.mock.method(Memory.prototype, "addSession", function (this: Memory, ...args: Parameters<Memory["addSession"]>) {
      const input = JSON.stringify(args[1]);
      assert.ok(![...questionTexts].some((text) => input.includes(text)), "no question text reaches the write path");
      events.push(`add:${args[0].user}`);
      return addSession.apply(this, args);
    });
    t.mock.method(Memory.prototype, "search", function (this: Memory, ...args: Parameters<Memory["search"]>) {
      events.push(`ask:${args[0].user}`);
      return search.apply(this, args);
    });
    await runBench({
      dataset,
      methods: benchMethods,
      models: createHashModels(),
      budget: defaultBudget,
      search: defaultSearchConfig,
    });
    for (const history of ["h1", "h2"]) {
      const firstAsk = events.indexOf(`ask:${history}`);
      const lastAdd = events.lastIndexOf(`add:${history}`);
      assert.ok(
        firstAsk > lastAdd,
        `${history}: all ${events.filter((e) => e === `add:${history}`).length} sessions before questions`,
      );
    }
  });
});
