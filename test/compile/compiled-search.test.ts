import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { scopedStore } from "../../src/memory.ts";
import { bikeHistory, day, scope } from "./support.ts";

describe("compiled search (PMMC at query time)", () => {
  it("falls back to the default search while the bank is empty, and says so", async (t) => {
    const memory = await bikeHistory(t);
    const pack = await memory.search(scope, "what did Ana name her bike?", { mode: "compiled" });
    assert.equal(pack.mode, "compiled");
    assert.equal(pack.compiled?.ran, false);
    assert.equal(pack.compiled?.reason, "the question bank is empty");
    assert.equal(pack.compiled?.fallback, "cairn");
    assert.ok(pack.items.length > 0, "the default search answered");
  });

  it("runs the banked program a query matches, under the budget, and names it in the trace", async (t) => {
    const memory = await bikeHistory(t);
    const reports = await memory.compile(scope);
    assert.equal(reports.length, 3);
    const bank = await memory.listPrograms(scope);
    assert.ok(bank.length >= 3, `bank ${bank.length}`);
    const [admission] = (await memory.listAudit(scope)).filter((event) => event.action === "bank.admit");
    assert.ok(admission, "banking is audited");
    // The most specific wording of the photo's prediction. (The two naming predictions, on s2's and on
    // s3's turn, are worded alike: δ rightly keeps either from running on the other's wording.)
    const [naming] = bank
      .filter((program) => program.kind === "visual-attribute")
      .sort((a, b) => b.question.length - a.question.length);
    assert.ok(naming);
    const pack = await memory.search(scope, naming.question, { mode: "compiled", budget: { rawNodes: 2 } });
    assert.equal(pack.compiled?.ran, true, pack.compiled?.reason ?? "");
    assert.equal(pack.compiled?.program?.id, naming.id);
    assert.ok((pack.compiled?.program?.score ?? 0) >= memory.compileConfig.alphaRoute);
    assert.ok(pack.compiled?.steps.some((step) => step.op === "materialise"));
    assert.ok(pack.items.length <= 2, "the budget holds");
    assert.ok(
      pack.items.some((item) => item.images.length > 0),
      "the photo comes as pixels",
    );
  });

  it("falls back, with the score and the gate, when no question matches well enough", async (t) => {
    const memory = await bikeHistory(t);
    await memory.compile(scope);
    const pack = await memory.search(scope, "quarterly tax forms for the accountant", { mode: "compiled" });
    assert.equal(pack.compiled?.ran, false);
    assert.match(pack.compiled?.reason ?? "", /below α_route 0.6|shares a word/);
    assert.deepEqual(pack.compiled?.gate, { alphaRoute: 0.6, margin: 0.05 });
  });

  it("below the gate, fuses the best program's evidence into the default search only when asked to", async (t) => {
    const question = "the handlebar tape Ana talked about, and her sunday plans";
    const plain = await bikeHistory(t);
    await plain.compile(scope);
    const dropped = await plain.search(scope, question, { mode: "compiled", budget: { rawNodes: 3 } });
    assert.equal(dropped.compiled?.ran, false);
    assert.doesNotMatch(dropped.compiled?.reason ?? "", /fused/, "the paper's gate drops a weak match");
    const cairn = await plain.search(scope, question, { mode: "cairn", budget: { rawNodes: 3 } });
    assert.deepEqual(
      dropped.items.map((item) => item.rawNodeId),
      cairn.items.map((item) => item.rawNodeId),
    );

    const floored = await bikeHistory(t, { compile: { fuseBelowGate: true } });
    await floored.compile(scope);
    const weak = await floored.search(scope, question, { mode: "compiled", budget: { rawNodes: 3 } });
    assert.match(weak.compiled?.reason ?? "", /not fused: under the fusion floor 0.45/, "a match this weak is noise");

    const fusing = await bikeHistory(t, { compile: { fuseBelowGate: true, fuseFloor: 0 } });
    await fusing.compile(scope);
    const fused = await fusing.search(scope, question, { mode: "compiled", budget: { rawNodes: 3 } });
    assert.equal(fused.compiled?.ran, false, "no program passed the gate");
    assert.match(fused.compiled?.reason ?? "", /below α_route 0.6; fused/);
    assert.ok((fused.compiled?.steps.length ?? 0) > 0, "the best program ran, and the trace shows its steps");
    assert.ok(fused.items.length <= 3, "the budget holds");
    const best = (await fusing.listPrograms(scope)).find((program) => program.id === fused.compiled?.program?.id);
    const defaultIds = new Set(cairn.items.map((item) => item.rawNodeId));
    assert.ok(
      fused.items.some((item) => best?.evidence.includes(item.rawNodeId) && !defaultIds.has(item.rawNodeId)),
      "its evidence joins the pack where the default search left it out",
    );
  });

  it("runs programs on the current state: the bank holds no answers", async (t) => {
    const memory = await bikeHistory(t);
    await memory.compile(scope, { session: "s3" });
    const update = (await memory.listPrograms(scope)).find((program) => program.kind === "state-update");
    assert.ok(update);
    await memory.addSession(scope, {
      session: "s4",
      time: day(20),
      turns: [{ speaker: "Ana", text: "Rocket now has a green saddle instead of the blue saddle." }],
    });
    const pack = await memory.search(scope, update.question, { mode: "compiled" });
    assert.equal(pack.compiled?.ran, true, pack.compiled?.reason ?? "");
    assert.ok(
      pack.items.some((item) => item.provenance.sessionKey === "s4"),
      "a session written after compilation is in the program's evidence",
    );
  });

  it("forget retires the programs whose evidence it deletes (invariant 1)", async (t) => {
    const memory = await bikeHistory(t);
    await memory.compile(scope);
    const before = await memory.listPrograms(scope);
    const s1 = await memory.getSession(scope, "s1");
    const s1Nodes = new Set((await memory.listRawNodes(scope, s1.id)).map((node) => node.id));
    const resting = before.filter((program) => program.evidence.some((id) => s1Nodes.has(id)));
    assert.ok(resting.length > 0);
    await memory.forget(scope, { session: "s1" });
    const after = await memory.listPrograms(scope);
    assert.deepEqual(
      after.map((program) => program.id),
      before.filter((program) => !resting.includes(program)).map((program) => program.id),
    );
    const leftovers = JSON.stringify(await memory[scopedStore](scope).readBank());
    assert.doesNotMatch(
      leftovers,
      /market|sunday|white|river/i,
      "no banked question or program keeps words only the forgotten session held",
    );
  });

  it("compiles a session once; compiling it again by name replaces its programs", async (t) => {
    const memory = await bikeHistory(t);
    await memory.compile(scope);
    const first = await memory.listPrograms(scope);
    assert.deepEqual(await memory.compile(scope), [], "every session is compiled already");
    assert.equal((await memory.listPrograms(scope)).length, first.length);
    const [again] = await memory.compile(scope, { session: "s2" });
    const after = await memory.listPrograms(scope);
    const anchoredOnS2 = (bank: typeof first) => bank.filter((program) => program.sessions.at(-1) === "s2");
    assert.equal(after.length, first.length, "the same session compiles to as many programs");
    assert.deepEqual(
      anchoredOnS2(after).map((program) => program.id),
      again?.banked,
      "s2's programs are the new ones",
    );
    assert.ok(anchoredOnS2(first).every((program) => !after.some((kept) => kept.id === program.id)));
    const [retired] = (await memory.listAudit(scope)).filter((event) => event.action === "bank.retire");
    assert.equal(retired?.details.reason, "recompiled");
  });

  it("compiles each session as it commits when asked to", async (t) => {
    const memory = await bikeHistory(t, { compile: { onCommit: true } });
    const bank = await memory.listPrograms(scope);
    assert.ok(bank.length > 0);
    assert.deepEqual([...new Set(bank.map((program) => program.sessions.at(-1)))].sort(), ["s1", "s2", "s3"]);
  });
});
