import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { type ExecutionContext, executeProgram } from "../../src/compile/execute-program.ts";
import { ProgramError, type ProgramProblem } from "../../src/compile/program-error.ts";
import { validateProgram } from "../../src/compile/validate-program.ts";
import { Memory, scopedStore } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { embedTexts } from "../../src/models/model-calls.ts";
import type { IndexEntry, IndexState } from "../../src/store/index-records.ts";
import { tempDir } from "../support/fixtures.ts";

const scope = { tenant: "acme", user: "ana" };
const entities = new Set(["biscuit", "porto"]);

function refused(program: unknown, problem: ProgramProblem) {
  assert.throws(
    () => validateProgram(program, { entities }),
    (error) => error instanceof ProgramError && error.problem === problem && error.code === "input",
    `expected ${problem}`,
  );
}

describe("program validation", () => {
  it("accepts a typed DAG in any step order and returns it in dataflow order", () => {
    const program = validateProgram(
      {
        version: 1,
        output: "pixels",
        steps: [
          { id: "pixels", op: "materialise", input: "both" },
          { id: "both", op: "union", inputs: ["words", "meaning"] },
          { id: "words", op: "lexical", query: "corgi", limit: 10 },
          { id: "meaning", op: "dense", query: "my dog", limit: 10 },
        ],
      },
      { entities },
    );
    assert.deepEqual(
      program.steps.map((step) => step.id),
      ["words", "meaning", "both", "pixels"],
    );
  });

  it("refuses cycles, type mismatches, unknown steps, entities and operators, and unbounded fan-out", () => {
    const search = { id: "a", op: "lexical", query: "x", limit: 5 };
    refused(
      {
        version: 1,
        output: "b",
        steps: [
          { id: "b", op: "top-k", input: "c", k: 3 },
          { id: "c", op: "top-k", input: "b", k: 3 },
        ],
      },
      "cycle",
    );
    refused({ version: 1, output: "b", steps: [{ id: "b", op: "expand", input: "b", window: 1 }] }, "cycle");
    refused(
      {
        version: 1,
        output: "c",
        steps: [search, { id: "b", op: "materialise", input: "a" }, { id: "c", op: "expand", input: "b", window: 1 }],
      },
      "type-mismatch",
    );
    refused({ version: 1, output: "b", steps: [search, { id: "b", op: "top-k", input: "z", k: 3 }] }, "unknown-step");
    refused(
      { version: 1, output: "b", steps: [search, { id: "b", op: "filter", input: "a", entity: "Lisbon" }] },
      "unknown-entity",
    );
    refused(
      { version: 1, output: "a", steps: [{ id: "a", op: "sql", query: "DROP TABLE raw_nodes" }] },
      "unknown-operator",
    );
    refused({ version: 1, output: "a", steps: [{ id: "a", op: "lexical", query: "x" }] }, "unbounded-fan-out");
    refused(
      { version: 1, output: "a", steps: [{ id: "a", op: "dense", query: "x", limit: 10_000 }] },
      "unbounded-fan-out",
    );
    refused({ version: 1, output: "a", steps: [search, search] }, "duplicate-step");
    refused({ version: 2, output: "a", steps: [search] }, "malformed");
    refused("lexical corgi", "malformed");
  });
});

async function memoryWithHistory(t: { after: (fn: () => void) => void }) {
  const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels() });
  t.after(() => memory.close());
  const day = (n: number) => new Date(Date.UTC(2024, 0, n)).toISOString();
  await memory.addSession(scope, {
    session: "s1",
    time: day(1),
    turns: [
      { speaker: "Ana", text: "We adopted a corgi puppy today." },
      { speaker: "Ana", text: "Biscuit eats chicken kibble." },
      { speaker: "Ana", text: "He sleeps under the desk." },
    ],
  });
  await memory.addSession(scope, {
    session: "s2",
    time: day(9),
    turns: [{ speaker: "Ana", text: "Biscuit now eats salmon kibble because of an allergy." }],
  });
  const scoped = memory[scopedStore](scope);
  const models = memory.models;
  return { memory, scoped, day, models };
}

function context(
  memory: Memory,
  scoped: ExecutionContext["store"],
  index?: () => Promise<IndexState>,
): ExecutionContext {
  return {
    store: scoped,
    spaces: {
      text: memory.spaces.text.name,
      imageText: memory.spaces.imageText.name,
      image: memory.spaces.image?.name ?? null,
    },
    embedText: async (text) => (await embedTexts(memory.models.text, [text]))[0],
    index: index ?? (() => scoped.readIndex({ activeOnly: false })),
    rrfK: 60,
  };
}

describe("program execution", () => {
  it("runs on the history as it stood at a time, and on the current state without one", async (t) => {
    const { memory, scoped, day } = await memoryWithHistory(t);
    const program = validateProgram(
      {
        version: 1,
        output: "newest",
        steps: [
          { id: "food", op: "lexical", query: "Biscuit kibble", limit: 10 },
          { id: "newest", op: "latest", input: "food", keep: 1, entity: "biscuit" },
        ],
      },
      { entities },
    );
    const then = await executeProgram(program, context(memory, scoped), { asOfMs: Date.parse(day(2)) });
    const now = await executeProgram(program, context(memory, scoped));
    assert.match(then.read.get(then.nodes[0] ?? "")?.text ?? "", /chicken/);
    assert.match(now.read.get(now.nodes[0] ?? "")?.text ?? "", /salmon/);
    assert.deepEqual(
      now.trace.map((step) => step.op),
      ["lexical", "latest"],
    );
  });

  it("expands to neighbours and walks update links to earlier states", async (t) => {
    const { memory, scoped } = await memoryWithHistory(t);
    const nodes = [...(await scoped.readRawNodes({ sessionId: (await memory.getSession(scope, "s1")).id }))];
    const [later] = await scoped.readRawNodes({ sessionId: (await memory.getSession(scope, "s2")).id });
    assert.ok(later && nodes[1]);
    const state = await scoped.readIndex({ activeOnly: false });
    const template = [...state.entries.values()][0] as IndexEntry;
    // An update chain: the salmon turn's entry supersedes the chicken turn's.
    const earlier: IndexEntry = {
      ...template,
      id: "e-old",
      status: "superseded",
      pointers: [nodes[1].id],
      predecessor: null,
    };
    const newer: IndexEntry = {
      ...template,
      id: "e-new",
      status: "active",
      pointers: [later.id],
      predecessor: "e-old",
    };
    const index = async () => ({
      version: 1,
      entries: new Map([
        ["e-old", earlier],
        ["e-new", newer],
      ]),
    });
    const walk = validateProgram(
      {
        version: 1,
        output: "history",
        steps: [
          { id: "now", op: "lexical", query: "salmon", limit: 1 },
          { id: "history", op: "temporal-walk", input: "now", direction: "earlier", depth: 2 },
        ],
      },
      { entities },
    );
    const walked = await executeProgram(walk, context(memory, scoped, index));
    assert.deepEqual(walked.nodes, [later.id, nodes[1].id]);
    const expand = validateProgram(
      {
        version: 1,
        output: "around",
        steps: [
          { id: "hit", op: "lexical", query: "chicken", limit: 1 },
          { id: "around", op: "expand", input: "hit", window: 1 },
        ],
      },
      { entities },
    );
    const expanded = await executeProgram(expand, context(memory, scoped));
    assert.deepEqual(new Set(expanded.nodes), new Set(nodes.map((node) => node.id)));
  });
});
