import assert from "node:assert/strict";
import { ConflictError, StoreError } from "../../src/core/errors.ts";
import type { SessionWrite } from "../../src/store/records.ts";
import type { ScopedStore, Store } from "../../src/store/store.ts";
import { compareStores, copyStore } from "../../src/store/transfer.ts";
import type { VideoItem } from "../../src/store/video-records.ts";
import {
  base,
  buildSessionWrite,
  defineGroup,
  embedImage,
  embedText,
  hour,
  ids,
  imageSpace,
  images,
  scopeA,
  scopeB,
  scopeC,
  sha256,
  spaces,
  textSpace,
} from "./conformance-support.ts";
import { forget } from "./scoped-reads.ts";

/** A store with three scopes in two tenants, shared images, an index, forgets and their redacted audit. */
async function populate(store: Store): Promise<{ retry: () => Promise<SessionWrite> }> {
  const { red, blue, green } = await images();
  for (const scope of [scopeA, scopeB, scopeC]) {
    const scoped = store.forScope(scope);
    for (let n = 0; n < 3; n++) {
      await scoped.commitSession(
        await buildSessionWrite({
          key: `s${n}`,
          timeMs: base + n * hour,
          turns: [
            {
              speaker: "Ana",
              text: `day ${n}: the lighthouse keeper of ${scope.tenant}`,
              images: [{ data: red, caption: "the lighthouse" }],
            },
            {
              speaker: "Bo",
              role: "assistant",
              text: `the ferry ran late ${n}`,
              metadata: { mood: n, tags: ["ferry"] },
              images: n === 1 ? [{ data: blue, derivedText: "TIMETABLE" }, { data: green }] : [],
            },
          ],
        }),
      );
    }
  }
  const a = store.forScope(scopeA);
  const [first] = await a.readSessions({ limit: 1 });
  assert.ok(first);
  await forget(a, { session: first.id }, spaces);
  const [node] = await a.readRawNodes({ sessionId: (await a.readSessions({}))[0]?.id ?? "" });
  assert.ok(node);
  await forget(a, { rawNode: node.id }, spaces);
  return extras(store.forScope(scopeC));
}

/**
 * What lives beside the sessions: a session written in appended parts (one of its turns forgotten),
 * a question-bank program resting on it and video items derived from it. Returns the parts' writes,
 * so a caller can retry one against a copy.
 */
export async function extras(scoped: ScopedStore): Promise<{ retry: () => Promise<SessionWrite> }> {
  const part = (text: string, partKey: string) => async () => ({
    ...(await buildSessionWrite({ key: "pier", timeMs: base + 5 * hour, turns: [{ speaker: "Ana", text }] })),
    append: { partKey },
  });
  const first = await scoped.commitSession(await part("the pier closed for repairs", "part-1")());
  const second = await scoped.commitSession(await part("the pier reopens on Friday", "part-2")());
  const third = await scoped.commitSession(await part("the pier cafe sells crab rolls", "part-3")());
  await forget(scoped, { rawNode: third.rawNodeIds[0] ?? "" }, spaces);
  const evidence = [...first.rawNodeIds, ...second.rawNodeIds];
  await scoped.admitPrograms(
    [
      {
        id: "prog_pier",
        question: "when does the pier reopen?",
        kind: "state-update",
        program: { version: 1, output: "a", steps: [{ id: "a", op: "lexical", query: "pier", limit: 5 }] },
        vector: await embedText("when does the pier reopen?"),
        space: textSpace.name,
        imageVector: null,
        imageSpace: null,
        evidence,
        sessions: ["pier"],
        coverFromMs: base + 5 * hour,
        coverToMs: base + 5 * hour,
        verification: { roles: "rules", attempts: [{ attempt: 0, diagnosis: null }] },
        createdMs: base + 6 * hour,
      },
    ],
    { action: "bank.admit", subject: "prog_pier", details: { programs: 1 } },
  );
  const video = (id: string, kind: VideoItem["kind"], more: Partial<VideoItem>): VideoItem => ({
    id,
    kind,
    stream: null,
    entityId: null,
    startMs: base,
    endMs: base + 1_000,
    text: "",
    data: {},
    vector: null,
    sources: [],
    ...more,
  });
  await scoped.commitVideo({
    put: [
      video("vent_gull", "entity", { text: "the gull", data: { named: true } }),
      video("vslot_gull", "slot", {
        entityId: "vent_gull",
        vector: new Float32Array([0.6, 0.8, 0]),
        sources: evidence,
      }),
      video("vobs_gull", "observation", {
        stream: "pier-cam",
        entityId: "vent_gull",
        text: "a gull on the rail",
        sources: evidence.slice(0, 1),
      }),
      video("vrule_gull", "rule", { text: "tell me when the gull is back" }),
    ],
    remove: [],
    audits: [{ action: "video.entity", subject: "vent_gull", details: { kind: "entity" } }],
    // What the notifier last sent for the rule on this source: a watch restarted on a copy keeps its cooldown.
    notifier: {
      stream: "pier-cam",
      rules: [{ ruleId: "vrule_gull", holding: true, lastSentMs: base + 500, event: 1, sentInEvent: 1 }],
    },
  });
  return { retry: part("the pier reopens on Friday", "part-2") };
}

/**
 * Conformance of transfer: a scope copied into another store with its ids, times, vectors, index
 * and audit log (what `cairn migrate` relies on to move SQLite into Postgres and back).
 */
export const transferConformance = defineGroup("transfer", (test) => {
  test("copyStore makes a record-for-record copy that searches the same; a second run skips every session", async (store, _t, another) => {
    const { retry } = await populate(store);
    const target = await another();
    const counts = await copyStore(store, target);
    assert.equal(counts.scopes, 3);
    assert.equal(
      counts.sessions,
      9,
      "three sessions in each of three scopes, less the forgotten one, and the appended one",
    );
    assert.deepEqual(
      [counts.sessionParts, counts.programs, counts.videoItems, counts.notifierRules],
      [2, 1, 4, 1],
      "appended parts (the third went with its forgotten turn), the bank, video memory and the notifier's record go with the sessions",
    );
    assert.equal(counts.skipped, 0);
    assert.ok(counts.entries > 0 && counts.auditEvents > 0);
    assert.deepEqual(await compareStores(store, target), [], "no record differs");

    for (const scope of [scopeA, scopeC]) {
      const [from, to] = [store.forScope(scope), target.forScope(scope)];
      for (const [field, query] of [
        ["text", "lighthouse keeper ferry"],
        ["imageText", "timetable lighthouse"],
      ] as const) {
        assert.deepEqual(
          await to.searchLexical(field, query, { limit: 10 }),
          await from.searchLexical(field, query, { limit: 10 }),
        );
      }
      const vector = await embedText("the ferry ran late 2");
      assert.deepEqual(
        ids(await to.searchVectors(textSpace.name, vector, { limit: 5 })),
        ids(await from.searchVectors(textSpace.name, vector, { limit: 5 })),
      );
      const { blue } = await images();
      assert.deepEqual(
        ids(await to.searchVectors(imageSpace.name, await embedImage(blue), { limit: 5 })),
        ids(await from.searchVectors(imageSpace.name, await embedImage(blue), { limit: 5 })),
      );
      assert.deepEqual(
        Buffer.from((await to.readBlob(sha256(blue), { thumbnail: true })).data),
        Buffer.from((await from.readBlob(sha256(blue), { thumbnail: true })).data),
      );
    }
    const again = await copyStore(store, target);
    assert.equal(again.sessions, 0);
    assert.equal(again.skipped, 9, "a resumed copy skips what is there");
    assert.equal(again.programs, 0, "programs already there are not admitted twice");
    assert.deepEqual(await compareStores(store, target), []);

    // The copy kept the parts: a retried append is acknowledged, not stored again.
    const retried = await target.forScope(scopeC).commitSession(await retry());
    assert.equal(retried.duplicate, true);
    // compareStores sees a program or a video item the copy lacks, and a resumed copy puts them back.
    const c = target.forScope(scopeC);
    await c.retirePrograms(["prog_pier"], { action: "bank.retire", subject: "prog_pier", details: {} });
    await c.commitVideo({ put: [], remove: ["vobs_gull"], audits: [] });
    await c.commitVideo({
      put: [],
      remove: [],
      audits: [],
      notifier: {
        stream: "pier-cam",
        rules: [{ ruleId: "vrule_gull", holding: false, lastSentMs: null, event: 1, sentInEvent: 0 }],
      },
    });
    const lacking = await compareStores(store, target);
    assert.ok(
      lacking.some((line) => line.endsWith("question bank differ")),
      lacking.join("\n"),
    );
    assert.ok(
      lacking.some((line) => line.endsWith("video items differ")),
      lacking.join("\n"),
    );
    assert.ok(
      lacking.some((line) => line.endsWith("notifier record of pier-cam differ")),
      lacking.join("\n"),
    );
    const resumed = await copyStore(store, target);
    assert.deepEqual([resumed.programs, resumed.videoItems, resumed.notifierRules], [1, 4, 1]);
    assert.deepEqual(await compareStores(store, target), []);

    // The copy is a working store: a new session goes through maintenance against the copied index.
    const added = await target
      .forScope(scopeC)
      .commitSession(
        await buildSessionWrite({ key: "after", timeMs: base + 9 * hour, turns: [{ text: "a new note" }] }),
      );
    assert.equal(added.duplicate, false);
    const differences = await compareStores(store, target);
    assert.ok(differences.length > 0, "compareStores sees the session the copy gained");
    assert.ok(
      differences.every((line) => line.startsWith("globex/")),
      differences.join("\n"),
    );
    // Copying again would replace that scope's index with one that does not reach the new session.
    const indexBefore = await target.forScope(scopeC).readIndex({ activeOnly: false });
    await assert.rejects(copyStore(store, target), ConflictError);
    assert.deepEqual(await target.forScope(scopeC).readIndex({ activeOnly: false }), indexBefore);
  });

  test("importSession keeps the identity, is idempotent, and refuses conflicts and plans without writing", async (store, _t, another) => {
    const target = await another();
    const source = store.forScope(scopeA);
    const { red } = await images();
    const write = await buildSessionWrite({ key: "k", turns: [{ text: "the heron", images: [{ data: red }] }] });
    const committed = await source.commitSession(write);
    const emptyPlan = { baseVersion: null, ops: [], audits: [], warnings: [], overflowRepairs: 0 };
    const imported = { ...write, index: { ...write.index, plan: emptyPlan } };
    const identity = {
      sessionId: committed.session.id,
      createdMs: Date.parse(committed.session.createdAt),
      rawNodeIds: committed.rawNodeIds,
    };
    const to = target.forScope(scopeA);
    assert.deepEqual(await to.importSession(imported, identity), { imported: true });
    assert.deepEqual(await to.readSessions({}), await source.readSessions({}));
    assert.deepEqual(
      await to.readRawNodes({ ids: committed.rawNodeIds }),
      await source.readRawNodes({ ids: committed.rawNodeIds }),
    );
    assert.deepEqual(await to.readAudit(), [], "an import adds no audit event: the log is restored as a whole");
    assert.deepEqual(
      await to.importSession(imported, identity),
      { imported: false },
      "the same session again is a no-op",
    );

    const before = { sessions: await to.readSessions({}), stats: await to.stats() };
    await assert.rejects(
      to.importSession(imported, { ...identity, sessionId: "ses_other" }),
      ConflictError,
      "same key, other id",
    );
    await assert.rejects(
      to.importSession({ ...imported, key: "k2" }, identity),
      ConflictError,
      "the id is taken by another key",
    );
    await assert.rejects(
      to.importSession(write, { ...identity, sessionId: "ses_planned" }),
      StoreError,
      "a plan comes with restore",
    );
    await assert.rejects(
      to.importSession({ ...imported, key: "k3" }, { ...identity, sessionId: "ses_short", rawNodeIds: [] }),
      StoreError,
      "one id per raw node",
    );
    assert.deepEqual(
      { sessions: await to.readSessions({}), stats: await to.stats() },
      before,
      "refusals wrote nothing",
    );
  });

  test("restoreIndexAndAudit replaces both in one step, moves the version on, and refuses dangling pointers", async (store) => {
    const a = store.forScope(scopeA);
    const committed = await a.commitSession(
      await buildSessionWrite({ key: "k", turns: [{ text: "the otter" }, { text: "the mill" }] }),
    );
    const index = await a.readIndex({ activeOnly: false });
    const audit = (await a.readAudit()).reverse();
    const version = (await a.indexStatus()).version;
    const [entry] = [...index.entries.values()];
    assert.ok(entry);
    const renamed = { ...entry, id: `${entry.id}_restored`, routingText: "restored routing text" };
    const spacesOf = { text: textSpace.name, image: imageSpace.name };
    const event = {
      id: "aud_restored",
      time: "2024-05-08T10:00:00.000Z",
      action: "session.add",
      subject: "ses_x",
      details: { n: 1 },
    };
    await a.restoreIndexAndAudit({ entries: [renamed], spaces: spacesOf }, [...audit, event]);
    const restored = await a.readIndex({ activeOnly: false });
    assert.deepEqual([...restored.entries.values()], [renamed]);
    assert.ok(restored.version > version, "a plan made against the old index can never apply");
    assert.deepEqual(await a.readAudit(), [event, ...[...audit].reverse()], "newest first, ids and times kept");

    const before = { index: await a.readIndex({ activeOnly: false }), audit: await a.readAudit() };
    const dangling = { ...renamed, id: "ent_dangling", pointers: [...committed.rawNodeIds, "rn_missing"] };
    await assert.rejects(a.restoreIndexAndAudit({ entries: [dangling], spaces: spacesOf }, []), StoreError);
    assert.deepEqual(
      { index: await a.readIndex({ activeOnly: false }), audit: await a.readAudit() },
      before,
      "nothing changed",
    );
  });
});
