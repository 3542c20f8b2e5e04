import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { BenchDataset } from "../../src/bench/dataset.ts";
import { selectMethods } from "../../src/bench/methods/index.ts";
import { pmmcMethods } from "../../src/bench/methods/pmmc-methods.ts";
import { runBench } from "../../src/bench/run-bench.ts";
import { defaultBudget } from "../../src/evidence/budget.ts";
import { compileWithout, Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { defaultSearchConfig } from "../../src/route/search-config.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";

/** One history with an image, a later naming and a state update; questions carry words no session has. */
async function dataset(dir: string): Promise<BenchDataset> {
  writeFile(dir, "kite.png", await drawPng({ shape: "square", color: "#f80" }));
  const turn = (id: string, text: string, extra: Record<string, unknown> = {}) => ({
    speaker: "Al",
    text,
    metadata: { datasetTurnId: id },
    ...extra,
  });
  return {
    name: "tiny-pmmc",
    notes: [],
    histories: [
      {
        id: "h1",
        baseDir: dir,
        sessions: [
          {
            session: "D1",
            time: "2024-01-01T10:00:00Z",
            turns: [
              turn("D1:1", "Here is the kite I built at the workshop.", {
                images: [{ path: "kite.png", caption: "an orange diamond kite with a long tail" }],
                metadata: { datasetTurnId: "D1:1", datasetImageIds: ["D1:IMG_1"] },
              }),
              turn("D1:2", "I love flying it on the beach at Brighton."),
            ],
          },
          {
            session: "D2",
            time: "2024-02-01T10:00:00Z",
            turns: [turn("D2:1", "I named the kite Comet because of the long tail."), turn("D2:2", "Lunch was soup.")],
          },
          {
            session: "D3",
            time: "2024-03-01T10:00:00Z",
            turns: [turn("D3:1", "Comet now has a new blue tail instead of the orange one.")],
          },
        ],
        questions: [
          {
            id: "q1",
            text: "What is the name of the kite zyzzogeton built?",
            category: "naming",
            gold: { turns: ["D2:1"], sessions: ["D2"], images: [] },
          },
          {
            id: "q2",
            text: "What colour is the tail of Comet now, quixotically?",
            category: "update",
            gold: { turns: ["D3:1"], sessions: ["D3"], images: [] },
          },
          {
            id: "q3",
            text: "What does the kite in the photo look like, xylographically?",
            category: "visual",
            gold: { turns: ["D1:1"], sessions: ["D1"], images: ["D1:IMG_1"] },
          },
        ],
      },
    ],
  };
}

const markers = /zyzzogeton|quixotically|xylographically/i;

describe("PMMC in the harness", () => {
  it("compiles before any question and never sees one: no question reaches compilation or the bank", async (t) => {
    const data = await dataset(tempDir(t));
    const events: string[] = [];
    const compile = Memory.prototype.compile;
    const compileOther = Memory.prototype[compileWithout];
    const search = Memory.prototype.search;
    t.mock.method(Memory.prototype, "compile", async function (this: Memory, ...args: Parameters<Memory["compile"]>) {
      assert.doesNotMatch(JSON.stringify(args), markers);
      events.push("compile");
      const reports = await compile.apply(this, args);
      assert.doesNotMatch(
        JSON.stringify(await this.listPrograms(args[0])),
        markers,
        "the bank holds no question's words",
      );
      return reports;
    });
    t.mock.method(
      Memory.prototype,
      compileWithout,
      async function (this: Memory, ...args: Parameters<Memory[typeof compileWithout]>) {
        assert.doesNotMatch(JSON.stringify(args[1]), markers);
        events.push("compile");
        const compiled = await compileOther.apply(this, args);
        assert.doesNotMatch(JSON.stringify(compiled), markers, "no compiled program holds a question's words");
        return compiled;
      },
    );
    t.mock.method(Memory.prototype, "search", function (this: Memory, ...args: Parameters<Memory["search"]>) {
      events.push("ask");
      return search.apply(this, args);
    });
    const results = await runBench({
      dataset: data,
      methods: selectMethods("pmmc,pmmc-no-doubter,pmmc-fixed-pipeline,pmmc-fused,pmmc-fused-any,pmmc-no-raw-images"),
      models: createHashModels(),
      budget: { ...defaultBudget, rawNodes: 4 },
      search: defaultSearchConfig,
    });
    const firstAsk = events.indexOf("ask");
    assert.ok(firstAsk > 0 && events.lastIndexOf("compile") < firstAsk, events.join(","));
    assert.equal(
      events.filter((event) => event === "compile").length,
      1 + 5 * 3,
      "pmmc once, each ablation per session",
    );

    assert.deepEqual(
      results.map((result) => result.method),
      pmmcMethods.map((method) => method.name),
    );
    for (const result of results) {
      const figures = result.compile;
      assert.ok(figures, `${result.method} reports its compilation`);
      assert.equal(figures.sessions, 3);
      assert.ok(figures.bankSizePerHistory > 0, `${result.method} banked programs`);
      assert.ok(figures.fallbackRate >= 0 && figures.fallbackRate <= 1);
      assert.ok(figures.cover5 !== null && figures.cover5 >= 0 && figures.cover5 <= 1);
      assert.ok((figures.match5 ?? 0) <= (figures.cover5 ?? 0), "Match@5 counts only covering matches");
      assert.equal(result.summary.questions, 3);
    }
  });
});
