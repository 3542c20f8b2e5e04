import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { checkIndex, routedReach, sources } from "../../src/maintain/check.ts";
import type { IndexBounds } from "../../src/maintain/config.ts";
import { buildIncomingEntries, type IncomingNode } from "../../src/maintain/incoming.ts";
import { ComparatorJudge } from "../../src/maintain/judge.ts";
import { planMaintenance, Ramu } from "../../src/maintain/ramu.ts";
import { hashTextEmbedder } from "../../src/models/hash-provider.ts";
import { applyOps } from "../../src/store/index-plan.ts";
import type { IndexState, MaintenanceAudit } from "../../src/store/index-records.ts";

/**
 * DESIGN invariants 2 and 6 for RAMU over 10,000 random session sequences, in memory (the same
 * planner and op semantics the store applies). Sequences are adversarial: exact and near
 * duplicates, later states of the same entity ("now", changed numbers), unrelated sessions, and
 * images whose vectors agree or disagree, under bounds small enough to force consolidation and
 * the overflow fallback constantly.
 */
const embedder = hashTextEmbedder(32);
const people = ["Ana", "Bruno", "Chen", "Dara"];
const places = ["Lisbon", "Porto", "Kyoto", "Lima", "Oslo"];
const pets = ["corgi", "parrot", "cat"];

const turnArb = fc.oneof(
  fc.record({ kind: fc.constant("lives"), who: fc.nat(3), where: fc.nat(4) }),
  fc.record({ kind: fc.constant("moved"), who: fc.nat(3), where: fc.nat(4) }),
  fc.record({ kind: fc.constant("pet"), who: fc.nat(3), pet: fc.nat(2), count: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ kind: fc.constant("repeat"), back: fc.nat(20) }),
  fc.record({ kind: fc.constant("noise"), seed: fc.nat(1000) }),
);
const sessionArb = fc.record({
  turns: fc.array(turnArb, { minLength: 1, maxLength: 6 }),
  image: fc.option(fc.nat(3), { nil: null }),
});
const boundsArb = fc.record({
  entries: fc.integer({ min: 2, max: 8 }),
  pages: fc.integer({ min: 1, max: 3 }),
  tokens: fc.integer({ min: 40, max: 600 }),
  bytes: fc.integer({ min: 2_000, max: 40_000 }),
});

function render(turn: Record<string, number | string>, said: string[]) {
  const who = people[Number(turn.who ?? 0)] as string;
  switch (turn.kind) {
    case "lives":
      return `${who} lives in ${places[Number(turn.where)]}.`;
    case "moved":
      return `${who} moved and now lives in ${places[Number(turn.where)]}.`;
    case "pet":
      return `${who} has ${turn.count} ${pets[Number(turn.pet)]}s.`;
    case "repeat":
      return said.length > 0
        ? (said[said.length - 1 - (Number(turn.back) % said.length)] as string)
        : `${who} says hi.`;
    default:
      return `Weather note ${turn.seed}: cloudy with a chance of rain near the harbour.`;
  }
}

function imageVector(which: number): Float32Array {
  const vector = new Float32Array(8);
  vector[which % 8] = 1;
  return vector;
}

type Session = { turns: Record<string, number | string>[]; image: number | null };

/** Replays one sequence through RAMU, asserting every invariant after each session; counts the actions seen. */
async function replay(sessions: readonly Session[], bounds: IndexBounds, seen: Record<string, number>) {
  let state: IndexState = { version: 0, entries: new Map() };
  const audits: MaintenanceAudit[] = [];
  const rawNodes: string[] = [];
  const said: string[] = [];
  let nextId = 0;
  const ramu = new Ramu(
    { bounds: bounds satisfies IndexBounds, candidates: 5, delta: 0.7, segmentMaxNodes: 3 },
    new ComparatorJudge(),
  );
  for (const [position, session] of sessions.entries()) {
    const texts = session.turns.map((turn) => render(turn as Record<string, number | string>, said));
    said.push(...texts);
    const vectors = await embedder.embed(texts);
    const nodes: IncomingNode[] = texts.map((text, index) => ({
      ref: `s${position}:${index}`,
      speaker: people[position % 2] as string,
      text,
      imageText: [],
      timeMs: Date.UTC(2024, 0, 1) + position * 86_400_000 + index * 1_000,
      vector: vectors[index] ?? null,
      imageVectors: session.image === null ? [] : [imageVector(session.image)],
    }));
    const incoming = buildIncomingEntries(`s${position}`, nodes, { segmentMaxNodes: 3, dimensions: 32 });
    const plan = await planMaintenance(state, incoming, ramu, {
      bounds,
      newId: () => `e${nextId++}`,
      nowMs: nodes[0]?.timeMs ?? 0,
    });
    assert.ok(
      plan.ops.every((op) => op.op !== "drop"),
      "RAMU never drops an entry",
    );
    const before = state;
    state = applyOps(state, plan.ops);
    rawNodes.push(...nodes.map((node) => node.ref));
    audits.push(...plan.audits);
    for (const audit of plan.audits) seen[audit.action] = (seen[audit.action] ?? 0) + 1;

    // C3M Eq. 4 for every Merge / Update / consolidation of this step.
    for (const audit of plan.audits) {
      const result = audit.details.result as { entry?: string } | undefined;
      const target = audit.details.target as string | undefined;
      if (!result?.entry) continue;
      const after = sources(state.entries, result.entry);
      if (audit.action === "index.merge" || audit.action === "index.update") {
        assert.ok(target, `${audit.action} names its target`);
        for (const pointer of sources(before.entries, target)) {
          assert.ok(after.has(pointer), `${audit.action} lost ${pointer} of ${target}`);
        }
        for (const pointer of audit.details.pointers as string[]) {
          assert.ok(after.has(pointer), `${audit.action} lost incoming ${pointer}`);
        }
      }
    }
    const violations = checkIndex({ entries: state.entries, rawNodeIds: rawNodes, audits, bounds });
    assert.deepEqual(violations, [], `after session ${position}`);
    // The router's walk reaches every raw node too, not only Eq. 4's sources.
    const walked = routedReach(state.entries);
    const missed = rawNodes.filter((ref) => !walked.has(ref));
    assert.deepEqual(missed, [], `the router's link walk misses raw nodes after session ${position}`);
  }
}

describe("RAMU over random session sequences", () => {
  it("never drops a pointer, never leaves an action unaudited, and holds the bounds (10,000 sequences)", async () => {
    let sequences = 0;
    const seen: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(fc.array(sessionArb, { minLength: 1, maxLength: 10 }), boundsArb, async (sessions, bounds) => {
        sequences++;
        await replay(sessions as Session[], bounds, seen);
      }),
      { numRuns: 10_000 },
    );
    assert.equal(sequences >= 10_000, true);
    // The sequences must exercise every action, or the property proves little.
    for (const action of [
      "index.add",
      "index.keep",
      "index.merge",
      "index.update",
      "index.consolidate",
      "index.overflow",
    ]) {
      assert.ok((seen[action] ?? 0) > 0, `no ${action} in 10,000 sequences: ${JSON.stringify(seen)}`);
    }
  });

  it("keeps an updated entry's earlier states reachable when consolidation merges it away", async () => {
    // Found by the property (seed -1555159473): the later state of an update was consolidated into an
    // older entry and its earlier state, with the segment that overflowed under it, was reached by nothing.
    const sessions: Session[] = [
      {
        turns: [
          { kind: "repeat", back: 0 },
          { kind: "moved", who: 0, where: 0 },
          { kind: "noise", seed: 0 },
          { kind: "lives", who: 3, where: 4 },
        ],
        image: 0,
      },
      {
        turns: [
          { kind: "repeat", back: 0 },
          { kind: "noise", seed: 1 },
          { kind: "noise", seed: 0 },
        ],
        image: 1,
      },
      {
        turns: [
          { kind: "pet", who: 3, pet: 1, count: 1 },
          { kind: "repeat", back: 8 },
          { kind: "repeat", back: 0 },
          { kind: "lives", who: 3, where: 3 },
        ],
        image: null,
      },
      { turns: [{ kind: "moved", who: 0, where: 0 }], image: null },
    ];
    const seen: Record<string, number> = {};
    await replay(sessions, { entries: 2, pages: 1, tokens: 40, bytes: 2000 }, seen);
    assert.ok((seen["index.consolidate"] ?? 0) > 0, `the sequence consolidates: ${JSON.stringify(seen)}`);
  });
});
