import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { scopedStore } from "../../src/memory.ts";
import { bikeHistory, day, scope } from "./support.ts";

// Close enough to s3 that maintenance records it as s3's update (the fixture tests re-verification, not the judge).
const update = {
  speaker: "Ana",
  text: "Rocket now has a new green saddle instead of the blue saddle and the old handlebar tape.",
};

describe("re-verification when maintenance supersedes a program's evidence", () => {
  it("refreshes, at the next consolidation, the programs resting on a superseded state that still reach the current one", async (t) => {
    const memory = await bikeHistory(t);
    await memory.compile(scope);
    const before = await memory.listPrograms(scope);
    const s3 = new Set(
      (await memory.listRawNodes(scope, (await memory.getSession(scope, "s3")).id)).map((node) => node.id),
    );
    const resting = before.filter((program) => program.evidence.some((id) => s3.has(id)));
    assert.ok(resting.some((program) => program.kind === "state-update"));

    await memory.addSession(scope, { session: "s4", time: day(20), turns: [update] });
    const [s4Node] = await memory.listRawNodes(scope, (await memory.getSession(scope, "s4")).id);
    assert.ok(s4Node);
    // Consolidation: compile() re-verifies first, then compiles the new session.
    await memory.compile(scope);

    const after = new Map((await memory.listPrograms(scope)).map((program) => [program.id, program]));
    for (const program of resting) {
      const now = after.get(program.id);
      assert.ok(now, `${program.question} stays in the bank`);
      assert.ok(now.evidence.includes(s4Node.id), "its evidence now holds the current state");
      assert.equal(now.question, program.question);
      assert.deepEqual(now.program, program.program, "the program itself is not changed");
      const [trace] = now.verification.reverified as { superseded: { entry: string; by: string }[] }[];
      assert.equal(trace?.superseded.length, 1);
    }
    for (const program of before.filter((candidate) => !resting.includes(candidate))) {
      assert.deepEqual(after.get(program.id)?.evidence, program.evidence, "programs on unchanged evidence are left");
    }
    const audit = await memory.listAudit(scope);
    const reverify = audit.find((event) => event.action === "bank.reverify");
    assert.equal(reverify?.details.refreshed, resting.length);
    assert.equal(reverify?.details.reason, "evidence superseded");

    // Proved on the current state now: the next consolidation has nothing to re-check.
    assert.deepEqual(await memory.reverifyBank(scope), { checked: 0, refreshed: [], retired: [] });
  });

  it("retires, audited with the question and why, a program that no longer reaches the current state", async (t) => {
    // A two-raw-node reader window: what the Doubter checks and what re-verification checks.
    const memory = await bikeHistory(t, { budget: { rawNodes: 2 } });
    await memory.compile(scope);
    // The model-free programs all search for the entity and so find its later state; a program that
    // asks only how Rocket got its name (a planner's narrower plan, banked on s3's turn) cannot.
    const s3 = new Set(
      (await memory.listRawNodes(scope, (await memory.getSession(scope, "s3")).id)).map((node) => node.id),
    );
    const template = (await memory.listPrograms(scope)).find((program) => program.evidence.some((id) => s3.has(id)));
    assert.ok(template);
    const narrow = {
      ...template,
      id: "prg_named_only",
      question: "Why is the bike named Rocket?",
      program: { version: 1, steps: [{ id: "said", op: "lexical", query: "named", limit: 2 }], output: "said" },
    };
    await memory[scopedStore](scope).admitPrograms([narrow], {
      action: "bank.admit",
      subject: "s3",
      details: { programs: [narrow.id] },
    });
    await memory.addSession(scope, { session: "s4", time: day(20), turns: [update] });
    const report = await memory.reverifyBank(scope);
    assert.ok(report.retired.length > 0, JSON.stringify(report));
    assert.ok(report.refreshed.length > 0, "others still reach it and are refreshed");
    for (const { reason } of report.retired)
      assert.match(reason, /does not reach the current state within the first 2/);

    const bank = new Set((await memory.listPrograms(scope)).map((program) => program.id));
    for (const { id } of report.retired) assert.equal(bank.has(id), false, "retired programs leave the bank");
    const view = await memory.bankView(scope);
    const retired = view.retired.filter((entry) => entry.reason === "superseded");
    assert.deepEqual(retired.map((entry) => entry.id).sort(), report.retired.map((entry) => entry.id).sort());
    assert.ok(retired.every((entry) => typeof entry.question === "string" && entry.question.length > 0));
    assert.ok(retired.every((entry) => /does not reach the current state/.test(entry.detail ?? "")));
    // A compiled search never runs a retired program.
    const [gone] = retired;
    const pack = await memory.search(scope, gone?.question ?? "", { mode: "compiled" });
    assert.notEqual(pack.compiled?.program?.id, gone?.id);
  });
});
