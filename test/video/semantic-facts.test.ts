import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { ProviderError } from "../../src/core/errors.ts";
import { createOpenAIChat } from "../../src/models/openai-provider.ts";
import type { VideoItem } from "../../src/store/video-records.ts";
import { decide, type RuleMemory } from "../../src/video/procedural/notifier.ts";
import { chatConsolidator } from "../../src/video/semantic/chat-consolidator.ts";
import { modelFreeConsolidator } from "../../src/video/semantic/consolidator.ts";
import {
  applyFactEdits,
  defaultSemanticConfig,
  type FactEdit,
  factData,
  identityFact,
  reinforce,
} from "../../src/video/semantic/facts.ts";
import { scenePatterns } from "../../src/video/semantic/scene.ts";
import { startFakeOpenAIServer } from "../models/fake-openai-server.ts";

const entity: VideoItem = {
  id: "vent_a",
  kind: "entity",
  stream: null,
  entityId: null,
  startMs: 0,
  endMs: 0,
  text: "Ana",
  data: {},
  vector: null,
  sources: [],
};

function observation(
  index: number,
  data: Record<string, unknown>,
  stream = "table.mp4@2026-01-01T10:00:00Z",
): VideoItem {
  return {
    id: `vobs_${index}`,
    kind: "observation",
    stream,
    entityId: entity.id,
    startMs: Date.parse("2026-01-01T10:00:00Z") + index * 10_000,
    endMs: Date.parse("2026-01-01T10:00:00Z") + index * 10_000 + 9_000,
    text: `observation ${index}`,
    data: { segment: index, ...data },
    vector: null,
    sources: [`raw_key_${index}`, `raw_crop_${index}`],
  };
}

function context(observations: readonly VideoItem[], by = "model-free") {
  let next = 0;
  return {
    entityId: entity.id,
    nowMs: 1,
    by,
    config: defaultSemanticConfig,
    observations: new Map(observations.map((item) => [item.id, item])),
    newId: () => `vfact_${++next}`,
  };
}

describe("semantic facts", () => {
  it("Eq. 1: each re-confirmation moves importance a fifth of the way to 1, and never past it", () => {
    assert.equal(reinforce(0.5, 0.2), 0.6);
    assert.ok(Math.abs(reinforce(0.6, 0.2) - 0.68) < 1e-12);
    assert.equal(reinforce(1, 0.2), 1);
  });

  it("add, confirm, revise and delete are applied, audited with their observations, and point to raw nodes", () => {
    const seen = [observation(1, {}), observation(2, {}), observation(3, {})];
    const added = applyFactEdits(
      [],
      [
        {
          op: "add",
          category: "relation",
          key: "near:bottle",
          text: "often seen near a bottle",
          observations: ["vobs_1"],
        },
      ],
      context(seen),
    );
    const [fact] = added.put;
    assert.ok(fact);
    assert.equal(factData(fact).importance, 0.5);
    assert.deepEqual(fact.sources, ["raw_key_1", "raw_crop_1"], "the fact resolves to the raw nodes behind it");
    assert.deepEqual(added.audits[0]?.details.observations, ["vobs_1"]);

    const confirmed = applyFactEdits(
      [fact],
      [{ op: "update", factId: fact.id, observations: ["vobs_2"] }],
      context(seen),
    );
    const again = confirmed.put[0];
    assert.ok(again);
    assert.equal(factData(again).importance, 0.6);
    assert.equal(factData(again).confirmations, 1);
    assert.deepEqual(again.sources, ["raw_key_1", "raw_crop_1", "raw_key_2", "raw_crop_2"]);
    assert.equal(confirmed.audits[0]?.action, "video.fact.confirm");

    const revised = applyFactEdits(
      [again],
      [{ op: "update", factId: fact.id, text: "often seen near two bottles", observations: ["vobs_3"] }],
      context(seen),
    );
    assert.equal(revised.put[0]?.text, "often seen near two bottles");
    assert.equal(factData(revised.put[0] as VideoItem).importance, 0.5, "a revised statement starts over");
    assert.deepEqual(
      factData(revised.put[0] as VideoItem).history.map((edit) => edit.op),
      ["add", "confirm", "revise"],
    );

    const deleted = applyFactEdits(
      [again],
      [{ op: "delete", factId: fact.id, reason: "gone", observations: ["vobs_3"] }],
      context(seen),
    );
    assert.deepEqual(deleted.remove, [fact.id]);
    assert.equal(deleted.audits[0]?.action, "video.fact.delete");
  });

  it("drops edits naming no existing fact, citing nothing it read, or touching identity", () => {
    const seen = [observation(1, {})];
    const identity = identityFact(entity, "vfact_id", 0);
    const applied = applyFactEdits(
      [identity],
      [
        { op: "update", factId: "vfact_missing", observations: ["vobs_1"] },
        { op: "delete", factId: "vfact_missing", reason: "x", observations: ["vobs_1"] },
        { op: "update", factId: "vfact_id", text: "is named Bea", observations: ["vobs_1"] },
        { op: "delete", factId: "vfact_id", reason: "x", observations: ["vobs_1"] },
        { op: "add", category: "identity", text: "is named Bea", observations: ["vobs_1"] },
        { op: "add", category: "habit", text: "sits", observations: ["vobs_99"] },
      ],
      context(seen, "chat:test"),
    );
    assert.deepEqual(applied.put, []);
    assert.deepEqual(applied.remove, []);
    assert.equal(applied.dropped.length, 6);
  });

  it("property: over random edit sequences, identity facts never change and importance follows Eq. 1", () => {
    const seen = Array.from({ length: 6 }, (_, index) => observation(index, {}));
    const ids = seen.map((item) => item.id);
    const editArb: fc.Arbitrary<(facts: readonly VideoItem[]) => FactEdit> = fc.oneof(
      fc.record({ text: fc.constantFrom("a", "b", "c", "is named Bea"), obs: fc.subarray(ids) }).map(
        ({ text, obs }) =>
          () =>
            ({ op: "add", category: "habit", text, observations: obs }) as FactEdit,
      ),
      fc.record({ pick: fc.nat(), obs: fc.subarray(ids), text: fc.option(fc.constantFrom("a", "b", "z")) }).map(
        ({ pick, obs, text }) =>
          (facts: readonly VideoItem[]) =>
            ({
              op: "update",
              factId: facts[pick % Math.max(1, facts.length)]?.id ?? "none",
              text,
              observations: obs,
            }) as FactEdit,
      ),
      fc.record({ pick: fc.nat(), obs: fc.subarray(ids) }).map(
        ({ pick, obs }) =>
          (facts: readonly VideoItem[]) =>
            ({
              op: "delete",
              factId: facts[pick % Math.max(1, facts.length)]?.id ?? "none",
              reason: "random",
              observations: obs,
            }) as FactEdit,
      ),
    );
    fc.assert(
      fc.property(fc.array(editArb, { maxLength: 30 }), (makers) => {
        const identity = identityFact(entity, "vfact_identity", 0);
        let facts: VideoItem[] = [identity];
        let next = 0;
        for (const make of makers) {
          const applied = applyFactEdits(facts, [make(facts)], {
            ...context(seen),
            newId: () => `vfact_n${++next}`,
          });
          const byId = new Map(facts.map((fact) => [fact.id, fact]));
          for (const fact of applied.put) {
            const before = byId.get(fact.id);
            const data = factData(fact);
            assert.ok(data.importance > 0 && data.importance <= 1);
            const last = data.history.at(-1);
            if (before && last?.op === "confirm")
              assert.ok(Math.abs(data.importance - reinforce(factData(before).importance, 0.2)) < 1e-12);
            byId.set(fact.id, fact);
          }
          for (const id of applied.remove) byId.delete(id);
          facts = [...byId.values()];
          const kept = facts.find((fact) => fact.id === "vfact_identity");
          assert.deepEqual(kept, identity, "the identity fact is untouched");
          assert.equal(facts.filter((fact) => factData(fact).category === "identity").length, 1);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("model-free consolidator: patterns become facts, new evidence confirms them, lost support deletes them", async () => {
    const consolidator = modelFreeConsolidator(defaultSemanticConfig);
    const history = [1, 2, 3, 4].map((index) =>
      observation(index, { faceVisible: false, moving: true, objects: index < 4 ? ["bottle"] : [] }),
    );
    const input = { entity, facts: [], observations: history, companions: new Map(), texts: new Map() };
    const first = await consolidator.consolidate(input);
    const added = first.edits.filter((edit) => edit.op === "add").map((edit) => (edit.op === "add" ? edit.key : ""));
    assert.deepEqual(added, ["view", "motion", "near:bottle", "source:table.mp4", "hours"]);
    const applied = applyFactEdits([], first.edits, context(history));

    const later = [
      ...history,
      ...[5, 6, 7, 8].map((index) => observation(index, { faceVisible: false, moving: true })),
    ];
    const second = await consolidator.consolidate({ ...input, facts: applied.put, observations: later });
    const next = applyFactEdits(applied.put, second.edits, context(later));
    assert.equal(next.counts.confirm, 4, "view, motion, source and hours confirmed by the new observations");
    assert.equal(next.counts.delete, 1, "the bottle is no longer near them in half the observations");
    const view = next.put.find((fact) => factData(fact).key === "view");
    assert.equal(factData(view as VideoItem).importance, 0.6);

    const repeat = await consolidator.consolidate({ ...input, facts: next.put, observations: later });
    assert.ok(
      repeat.edits.every((edit) => edit.op === "none"),
      "no new evidence, no change",
    );
  });
});

describe("the chat consolidator through the openai provider", () => {
  it("sends the entity's facts and observations, keeps valid edits and drops invalid ones", async (t) => {
    const server = await startFakeOpenAIServer();
    const { chat, close } = createOpenAIChat({ baseUrl: server.url, apiKey: "sk-test", model: "gpt-4o-mini" });
    t.after(async () => {
      await close();
      await server.close();
    });
    const seen = [1, 2, 3].map((index) => observation(index, { objects: ["bottle"] }));
    const identity = identityFact(entity, "vfact_identity", 0);
    const near = applyFactEdits(
      [],
      [{ op: "add", category: "relation", text: "often seen near a bottle", observations: ["vobs_1"] }],
      { ...context(seen), newId: () => "vfact_near" },
    ).put;
    server.replyNext("/chat/completions", { fixture: "chat-completion-fact-edits" });
    const consolidator = chatConsolidator(chat);
    const facts = [identity, ...near];
    const { edits, warnings } = await consolidator.consolidate({
      entity,
      facts,
      observations: seen,
      companions: new Map(),
      texts: new Map(),
    });
    assert.equal(warnings.length, 1, "the add without text is malformed and dropped");
    const applied = applyFactEdits(facts, edits, context(seen, consolidator.id));
    assert.deepEqual(applied.counts, { add: 1, confirm: 1, revise: 0, delete: 0, none: 1 });
    assert.deepEqual(
      applied.dropped.map((drop) => drop.reason),
      ["no fact vfact_unknown of entity vent_a", "identity facts are protected from automatic change"],
    );
    assert.ok(applied.put.some((fact) => fact.text === "stands at the round table"));
    const body = server.requestsTo("/chat/completions")[0]?.body as { messages: { content: string }[] };
    const sent = JSON.parse(body.messages[1]?.content ?? "{}") as { facts: { id: string }[]; observations: unknown[] };
    assert.deepEqual(
      sent.facts.map((fact) => fact.id),
      ["vfact_identity", "vfact_near"],
    );
    assert.equal(sent.observations.length, 3);

    server.replyNext("/chat/completions", { fixture: "chat-completion-invalid-json" });
    await assert.rejects(
      consolidator.consolidate({ entity, facts, observations: seen, companions: new Map(), texts: new Map() }),
      ProviderError,
      "an invalid answer is an error the pipeline turns into a warning, facts unchanged",
    );
  });
});

describe("scene facts of a source (per-source semantic memory)", () => {
  const trace = (index: number, data: Record<string, unknown>): VideoItem => ({
    id: `vtrace_${index}`,
    kind: "trace",
    stream: "table@2026-01-01T10:00:00Z",
    entityId: null,
    startMs: index * 10_000,
    endMs: index * 10_000 + 10_000,
    text: `segment ${index}`,
    data,
    vector: null,
    sources: [`frame_${index}`],
  });
  const people = (...perFrame: number[]) => perFrame.map((person, ms) => ({ ms, person }));

  it("finds what recurs across visitors: the place is visited by different people, one at a time, silently", () => {
    // Four visitors in turn (one person per segment; a single frame's second box is not a second person), no speech.
    const traces = [1, 2, 3, 4, 5, 6].map((index) =>
      trace(index, {
        entities: [`vent_${Math.ceil(index / 2)}`],
        objects: index % 3 === 0 ? { chair: 1 } : {},
        counts: people(1, 1, 2, 1),
        audio: "ok",
        voicedMs: 0,
      }),
    );
    const found = new Map(scenePatterns(traces, defaultSemanticConfig).map((pattern) => [pattern.text, pattern]));
    assert.deepEqual([...found.keys()].sort(), [
      "different people come and go",
      "usually one person in view at a time",
      "usually silent",
    ]);
    assert.equal(found.get("usually one person in view at a time")?.support.length, 6);
  });

  it("says nothing of speech without audio, and nothing of visitors when one person is always there", () => {
    const traces = [1, 2, 3].map((index) =>
      trace(index, { entities: ["vent_1"], objects: {}, counts: people(1, 1), audio: "absent", voicedMs: 0 }),
    );
    assert.deepEqual(
      scenePatterns(traces, defaultSemanticConfig).map((pattern) => pattern.text),
      ["usually one person in view at a time"],
    );
  });
});

describe("the notifier alone decides (pure)", () => {
  const policy = { cooldownMs: 60_000, budgetPerEvent: 2, muted: false };
  const signal = (atMs: number, holds: boolean) => ({
    ruleId: "vrule_1",
    holds,
    atMs,
    value: holds ? 1 : 3,
    detail: "",
    change: true,
  });

  it("sends when a condition starts holding, then suppresses duplicates, the cooldown, the budget and replays", () => {
    let memory: ReadonlyMap<string, RuleMemory> = new Map();
    const outcomes: string[] = [];
    let last = "";
    for (const [atMs, holds, event] of [
      [0, true, 0],
      [5_000, true, 0],
      [10_000, false, 0],
      [30_000, true, 0],
      [40_000, false, 0],
      [100_000, true, 0],
      [110_000, false, 0],
      [200_000, true, 0],
      [210_000, false, 0],
      [300_000, true, 1],
      [310_000, false, 1],
      [250_000, true, 1],
    ] as const) {
      const decided = decide(memory, [signal(atMs, holds)], policy, event);
      memory = decided.memory;
      outcomes.push(
        ...decided.decisions.map((decision) =>
          [decision.outcome, decision.reason.match(/^\w+:/)?.[0]].filter(Boolean).join(" "),
        ),
      );
      last = decided.decisions.at(-1)?.reason ?? last;
    }
    assert.deepEqual(outcomes, [
      "send",
      "suppressed duplicate:",
      "cleared",
      "suppressed cooldown:",
      "cleared",
      "send",
      "cleared",
      "suppressed budget:",
      "cleared",
      "send",
      "cleared",
      "suppressed cooldown:",
    ]);
    assert.equal(memory.get("vrule_1")?.lastSentMs, 300_000);
    assert.match(
      last,
      /50 s before the last delivery/,
      "media replayed from before the last delivery is not sent again",
    );
  });
});
