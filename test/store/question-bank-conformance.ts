import assert from "node:assert/strict";
import { InputError } from "../../src/core/errors.ts";
import type { BankProgram } from "../../src/store/bank-records.ts";
import type { ScopedStore } from "../../src/store/store.ts";
import {
  assertClose,
  base,
  buildSessionWrite,
  defineGroup,
  embedText,
  hour,
  imageSpace,
  scopeA,
  scopeB,
  spaces,
  textSpace,
} from "./conformance-support.ts";
import { forget } from "./scoped-reads.ts";

/** Two sessions of two turns in the scope; returns the raw-node ids per session key. */
async function history(scoped: ScopedStore): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const [n, key] of ["walk", "vet"].entries()) {
    const result = await scoped.commitSession(
      await buildSessionWrite({
        key,
        timeMs: base + n * hour,
        turns: [
          { speaker: "Ana", text: `${key}: Biscuit the corgi` },
          { speaker: "Bo", text: `${key}: noted` },
        ],
      }),
    );
    out.set(key, [...result.rawNodeIds]);
  }
  return out;
}

async function program(id: string, question: string, evidence: readonly string[]): Promise<BankProgram> {
  return {
    id,
    question,
    kind: "state-update",
    program: { version: 1, output: "a", steps: [{ id: "a", op: "lexical", query: "corgi", limit: 5 }] },
    vector: await embedText(question),
    space: textSpace.name,
    imageVector: Float32Array.from({ length: imageSpace.dimensions }, (_, index) => (index === 0 ? 1 : 0)),
    imageSpace: imageSpace.name,
    evidence,
    sessions: ["walk", "vet"],
    coverFromMs: base,
    coverToMs: base + hour,
    verification: { roles: "rules", attempts: [{ attempt: 0, diagnosis: null }] },
    createdMs: base + 2 * hour,
  };
}

const admit = (id: string, count: number) => ({ action: "bank.admit", subject: id, details: { programs: count } });

export const questionBankConformance = defineGroup("question bank", (test) => {
  test("admitPrograms keeps programs per scope with their evidence, vector and verification, and audits the admission", async (store) => {
    const a = store.forScope(scopeA);
    const nodes = await history(a);
    const walk = nodes.get("walk") ?? [];
    const first = await program("p1", "where did Biscuit walk?", walk);
    const second = await program("p2", "what did the vet say?", [...(nodes.get("vet") ?? []), ...walk.slice(0, 1)]);
    await a.admitPrograms([first, second], admit("compile-1", 2));
    const bank = await a.readBank();
    assert.deepEqual(
      bank.map((entry) => [entry.id, entry.question, entry.evidence]),
      [
        ["p1", first.question, first.evidence],
        ["p2", second.question, second.evidence],
      ],
    );
    assertClose(bank[0]?.vector ?? null, first.vector, "the question vector comes back");
    assertClose(bank[0]?.imageVector ?? null, first.imageVector, "the image vector comes back");
    assert.equal(bank[0]?.imageSpace, imageSpace.name);
    assert.deepEqual(bank[0]?.program, first.program);
    assert.deepEqual(bank[0]?.verification, first.verification);
    assert.deepEqual(bank[0]?.sessions, ["walk", "vet"]);
    assert.equal(bank[0]?.coverToMs, base + hour);
    assert.deepEqual(
      (await a.readBank({ limit: 1, offset: 1 })).map((entry) => entry.id),
      ["p2"],
    );
    const [event] = await a.readAudit({ limit: 1 });
    assert.equal(event?.action, "bank.admit");
    assert.deepEqual(await store.forScope(scopeB).readBank(), [], "another scope sees no program");
  });

  test("admitPrograms refuses evidence that is no raw node of the scope, or none, and writes nothing", async (store) => {
    const a = store.forScope(scopeA);
    const b = store.forScope(scopeB);
    const mine = await history(a);
    const theirs = await history(b);
    const auditBefore = (await a.readAudit()).length;
    const good = await program("p1", "where did Biscuit walk?", mine.get("walk") ?? []);
    const foreign = await program("p2", "what did the vet say?", theirs.get("vet") ?? []);
    await assert.rejects(a.admitPrograms([good, foreign], admit("c", 2)), InputError);
    await assert.rejects(a.admitPrograms([{ ...good, evidence: [] }], admit("c", 1)), InputError);
    assert.deepEqual(await a.readBank(), [], "the valid program of the refused batch is not kept either");
    assert.equal((await a.readAudit()).length, auditBefore);
  });

  test("forget retires the programs resting on what it deletes, in the same transaction, and keeps the others", async (store) => {
    const a = store.forScope(scopeA);
    const nodes = await history(a);
    const walk = nodes.get("walk") ?? [];
    const vet = nodes.get("vet") ?? [];
    await a.admitPrograms(
      [
        await program("on-walk", "where did Biscuit walk?", walk),
        await program("on-vet", "what did the vet say?", vet),
        await program("on-one-vet-turn", "who noted it?", vet.slice(1)),
      ],
      admit("c", 3),
    );
    await forget(a, { rawNode: vet[1] ?? "" }, spaces);
    assert.deepEqual(
      (await a.readBank()).map((entry) => entry.id),
      ["on-walk"],
    );
    const [forgotten] = await a.readAudit({ limit: 1 });
    assert.equal(forgotten?.action, "forget");
    assert.equal(forgotten?.details.programs, 2);
    const session = (await a.readSessions({ keys: ["walk"] }))[0];
    await forget(a, { session: session?.id ?? "" }, spaces);
    assert.deepEqual(await a.readBank(), []);
  });

  test("retirePrograms removes programs by id, ignores unknown ones, and audits the retirement", async (store) => {
    const a = store.forScope(scopeA);
    const nodes = await history(a);
    await a.admitPrograms(
      [await program("p1", "where?", nodes.get("walk") ?? []), await program("p2", "what?", nodes.get("vet") ?? [])],
      admit("c", 2),
    );
    const retired = await a.retirePrograms(["p1", "nope"], {
      action: "bank.retire",
      subject: "p1",
      details: { reason: "superseded" },
    });
    assert.equal(retired, 1);
    assert.deepEqual(
      (await a.readBank()).map((entry) => entry.id),
      ["p2"],
    );
    const [event] = await a.readAudit({ limit: 1 });
    assert.equal(event?.action, "bank.retire");
    assert.equal(event?.details.retired, 1);
    assert.equal(
      await store.forScope(scopeB).retirePrograms(["p2"], { action: "bank.retire", subject: "p2", details: {} }),
      0,
    );
    assert.equal((await a.readBank()).length, 1, "another scope cannot retire this scope's program");
  });

  test("refreshPrograms replaces banked programs' evidence and verification by id, atomically and audited", async (store) => {
    const a = store.forScope(scopeA);
    const nodes = await history(a);
    const walk = nodes.get("walk") ?? [];
    const vet = nodes.get("vet") ?? [];
    const original = await program("p1", "where did Biscuit walk?", walk);
    await a.admitPrograms([original, await program("p2", "what?", vet)], admit("c", 2));
    const reverified = { ...original.verification, reverified: [{ atMs: base + 5 * hour, outcome: "refreshed" }] };
    const refreshed = await a.refreshPrograms(
      [
        { ...original, evidence: [vet[0] ?? "", walk[0] ?? ""], coverToMs: base + 4 * hour, verification: reverified },
        { ...original, id: "unknown" },
      ],
      { action: "bank.reverify", subject: "consolidation", details: { reason: "evidence superseded" } },
    );
    assert.equal(refreshed, 1, "unknown ids are ignored");
    const [p1, p2] = await a.readBank();
    assert.deepEqual(p1?.evidence, [vet[0], walk[0]], "the new evidence, in its order");
    assert.equal(p1?.coverToMs, base + 4 * hour);
    assert.deepEqual(p1?.verification, reverified);
    assert.equal(p1?.question, original.question, "the question and program stay");
    assert.deepEqual(p1?.program, original.program);
    assert.deepEqual(p2?.evidence, vet, "other programs are untouched");
    const [event] = await a.readAudit({ limit: 1 });
    assert.equal(event?.action, "bank.reverify");
    assert.equal(event?.details.refreshed, 1);

    // Refreshed evidence is what a forget retires on: the old walk turn no longer holds p1, the new vet turn does.
    await forget(a, { rawNode: walk[1] ?? "" }, spaces);
    assert.deepEqual(
      (await a.readBank()).map((entry) => entry.id),
      ["p1", "p2"],
    );

    const foreign = (await history(store.forScope(scopeB))).get("walk") ?? [];
    await assert.rejects(
      a.refreshPrograms([{ ...original, evidence: foreign }], { action: "bank.reverify", subject: "x", details: {} }),
      InputError,
    );
    await assert.rejects(
      a.refreshPrograms([{ ...original, evidence: [] }], { action: "bank.reverify", subject: "x", details: {} }),
      InputError,
    );
    assert.deepEqual((await a.readBank())[0]?.evidence, [vet[0], walk[0]], "a refused refresh writes nothing");
    assert.equal((await a.readAudit({ limit: 1 }))[0]?.action, "forget", "nor an audit event");
    assert.equal(
      await store.forScope(scopeB).refreshPrograms([{ ...original, evidence: foreign }], {
        action: "bank.reverify",
        subject: "x",
        details: {},
      }),
      0,
      "another scope cannot refresh this scope's program",
    );
  });
});
