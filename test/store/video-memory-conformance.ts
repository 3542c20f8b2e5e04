import assert from "node:assert/strict";
import { InputError } from "../../src/core/errors.ts";
import type { ScopedStore } from "../../src/store/store.ts";
import type { VideoItem } from "../../src/store/video-records.ts";
import { base, buildSessionWrite, defineGroup, scopeA, scopeC, spaces } from "./conformance-support.ts";
import { forget } from "./scoped-reads.ts";

/** Two frames of a stream, stored as raw nodes: the evidence video items derive from. */
async function frames(scoped: ScopedStore, key = "seg-0"): Promise<string[]> {
  const result = await scoped.commitSession(
    await buildSessionWrite({
      key,
      timeMs: base,
      turns: [
        { speaker: "camera", text: "key frame: a person at the table" },
        { speaker: "camera", text: "face crop" },
      ],
    }),
  );
  return [...result.rawNodeIds];
}

function item(overrides: Partial<VideoItem> & Pick<VideoItem, "id" | "kind">): VideoItem {
  return {
    stream: null,
    entityId: null,
    startMs: base,
    endMs: base + 1000,
    text: "",
    data: {},
    vector: null,
    sources: [],
    ...overrides,
  };
}

/** Conformance of the video memory: entities, gallery slots and episodes with the raw nodes they derive from. */
export const videoMemoryConformance = defineGroup("video memory", (test) => {
  test("video items round-trip with their vectors and sources, filtered by kind, entity and stream", async (store) => {
    const scoped = store.forScope(scopeA);
    const [frame, crop] = await frames(scoped);
    assert.ok(frame && crop);
    const vector = new Float32Array([0.6, 0.8, 0]);
    await scoped.commitVideo({
      put: [
        item({ id: "vent_1", kind: "entity", data: { kind: "person" } }),
        item({ id: "vslot_1", kind: "slot", entityId: "vent_1", vector, sources: [crop], data: { modality: "face" } }),
        item({
          id: "vobs_1",
          kind: "observation",
          entityId: "vent_1",
          stream: "cam",
          text: "at the table",
          sources: [crop, frame],
        }),
        item({
          id: "vtrace_1",
          kind: "trace",
          stream: "cam",
          startMs: base + 5,
          text: "one person",
          sources: [frame, crop],
        }),
      ],
      remove: [],
      audits: [{ action: "video.entity.new", subject: "vent_1", details: { reason: "no candidate" } }],
    });
    const slots = await scoped.readVideoItems({ kinds: ["slot"] });
    assert.equal(slots.length, 1);
    assert.deepEqual(
      [...(slots[0]?.vector ?? [])].map((x) => Math.round(x * 10) / 10),
      [0.6, 0.8, 0],
    );
    assert.deepEqual(slots[0]?.sources, [crop]);
    assert.deepEqual(
      (await scoped.readVideoItems({ entityIds: ["vent_1"] })).map((found) => found.id),
      ["vobs_1", "vslot_1"],
    );
    assert.deepEqual(
      (await scoped.readVideoItems({ stream: "cam", kinds: ["trace", "observation"] })).map((found) => found.id),
      ["vobs_1", "vtrace_1"],
    );
    const [observation] = await scoped.readVideoItems({ ids: ["vobs_1"] });
    assert.deepEqual([...(observation?.sources ?? [])].sort(), [crop, frame].sort());
    assert.equal((await scoped.readAudit({ limit: 1 }))[0]?.action, "video.entity.new");
    assert.deepEqual(await store.forScope(scopeC).readVideoItems({}), [], "another tenant sees none of it");
  });

  test("reads narrow to given start times and read newest first, a limit then keeping the latest", async (store) => {
    const scoped = store.forScope(scopeA);
    const segment = (index: number) => base + index * 10_000;
    // Three segments of a stream; the second has two observations and a trace, the third is another stream's.
    await scoped.commitVideo({
      put: [
        item({ id: "vent_1", kind: "entity" }),
        item({ id: "vobs_a", kind: "observation", entityId: "vent_1", stream: "cam", startMs: segment(0) }),
        item({ id: "vobs_c", kind: "observation", entityId: "vent_1", stream: "cam", startMs: segment(1) }),
        item({ id: "vobs_b", kind: "observation", stream: "cam", startMs: segment(1) }),
        item({ id: "vtrace_b", kind: "trace", stream: "cam", startMs: segment(1) }),
        item({ id: "vobs_d", kind: "observation", entityId: "vent_1", stream: "hall", startMs: segment(2) }),
        item({ id: "vobs_e", kind: "observation", entityId: "vent_1", stream: "cam", startMs: segment(3) }),
      ],
      remove: [],
      audits: [],
    });
    const ids = async (query: Parameters<ScopedStore["readVideoItems"]>[0]) =>
      (await scoped.readVideoItems(query)).map((found) => found.id);
    assert.deepEqual(await ids({ stream: "cam", startsAt: [segment(1)] }), ["vobs_b", "vobs_c", "vtrace_b"]);
    assert.deepEqual(await ids({ kinds: ["observation"], startsAt: [segment(3), segment(0), segment(2)] }), [
      "vobs_a",
      "vobs_d",
      "vobs_e",
    ]);
    assert.deepEqual(await ids({ startsAt: [] }), []);
    const all = await ids({ kinds: ["observation"], entityIds: ["vent_1"] });
    assert.deepEqual(all, ["vobs_a", "vobs_c", "vobs_d", "vobs_e"]);
    // Newest first is the exact reverse, ties on start time broken by id; a limit keeps the latest.
    assert.deepEqual(await ids({ kinds: ["observation"], newestFirst: true }), [
      "vobs_e",
      "vobs_d",
      "vobs_c",
      "vobs_b",
      "vobs_a",
    ]);
    assert.deepEqual(await ids({ kinds: ["observation"], entityIds: ["vent_1"], newestFirst: true, limit: 2 }), [
      "vobs_e",
      "vobs_d",
    ]);
    assert.deepEqual(await ids({ kinds: ["observation"], newestFirst: true, limit: 2, offset: 2 }), [
      "vobs_c",
      "vobs_b",
    ]);
    // Another scope sees none of them.
    assert.deepEqual(await store.forScope(scopeC).readVideoItems({ startsAt: [segment(1)] }), []);
  });

  test("a put replaces an item by id; a remove deletes it; an unknown source is refused and changes nothing", async (store) => {
    const scoped = store.forScope(scopeA);
    const [frame] = await frames(scoped);
    assert.ok(frame);
    await scoped.commitVideo({ put: [item({ id: "vent_1", kind: "entity" })], remove: [], audits: [] });
    await scoped.commitVideo({ put: [item({ id: "vent_1", kind: "entity", text: "Ana" })], remove: [], audits: [] });
    assert.deepEqual(
      (await scoped.readVideoItems({})).map((found) => [found.id, found.text]),
      [["vent_1", "Ana"]],
    );
    await assert.rejects(
      scoped.commitVideo({
        put: [item({ id: "vobs_9", kind: "observation", sources: [frame, "raw_from_elsewhere"] })],
        remove: ["vent_1"],
        audits: [{ action: "video.observation", subject: "vobs_9", details: {} }],
      }),
      InputError,
    );
    assert.equal((await scoped.readVideoItems({})).length, 1, "the rejected write removed nothing");
    const otherTenant = store.forScope(scopeC);
    await assert.rejects(
      otherTenant.commitVideo({ put: [item({ id: "x", kind: "trace", sources: [frame] })], remove: [], audits: [] }),
      InputError,
      "a raw node of another scope is not a source",
    );
    await scoped.commitVideo({ put: [], remove: ["vent_1"], audits: [] });
    assert.deepEqual(await scoped.readVideoItems({}), []);
  });

  test("forget cascades to video items derived from the forgotten raw nodes and to entities left bare", async (store) => {
    const scoped = store.forScope(scopeA);
    const [frame, crop] = await frames(scoped);
    const [laterFrame] = await frames(scoped, "seg-1");
    assert.ok(frame && crop && laterFrame);
    await scoped.commitVideo({
      put: [
        item({ id: "vent_1", kind: "entity" }),
        item({ id: "vent_2", kind: "entity", text: "Named by a user" }),
        item({ id: "vslot_1", kind: "slot", entityId: "vent_1", vector: new Float32Array([1, 0]), sources: [crop] }),
        item({ id: "vslot_2", kind: "slot", entityId: "vent_2", vector: new Float32Array([0, 1]), sources: [crop] }),
        item({ id: "vobs_1", kind: "observation", entityId: "vent_1", sources: [crop] }),
        item({ id: "vtrace_1", kind: "trace", sources: [frame, crop] }),
        item({ id: "vtrace_2", kind: "trace", sources: [laterFrame] }),
      ],
      remove: [],
      audits: [],
    });
    const [session] = await scoped.readSessions({ keys: ["seg-0"] });
    assert.ok(session);
    await forget(scoped, { session: session.id }, spaces);
    assert.deepEqual(
      (await scoped.readVideoItems({})).map((found) => found.id),
      ["vent_2", "vtrace_2"],
      "the slots, the observation and the trace of the forgotten frames went, and the entity left with nothing; the named entity stays",
    );
    const [event] = await scoped.readAudit({ limit: 1 });
    assert.equal(event?.details.videoItems, 5);
    await forget(scoped, { all: true }, spaces);
    assert.deepEqual(await scoped.readVideoItems({}), []);
  });

  test("forget cascades to semantic facts and notifications derived from forgotten frames; rules stay", async (store) => {
    const scoped = store.forScope(scopeA);
    const [frame, crop] = await frames(scoped);
    const [laterFrame, laterCrop] = await frames(scoped, "seg-1");
    assert.ok(frame && crop && laterFrame && laterCrop);
    await scoped.commitVideo({
      put: [
        item({ id: "vent_1", kind: "entity" }),
        item({ id: "vent_2", kind: "entity" }),
        item({ id: "vobs_1", kind: "observation", entityId: "vent_1", sources: [crop] }),
        item({ id: "vobs_2", kind: "observation", entityId: "vent_2", sources: [laterCrop] }),
        item({ id: "vcons_vent_1", kind: "consolidation", entityId: "vent_1", data: { count: 3 } }),
        item({ id: "vcons_vent_2", kind: "consolidation", entityId: "vent_2", data: { count: 1 } }),
        // A fact justified by both segments goes when either goes (the strict reading of "derived from").
        item({ id: "vfact_1", kind: "fact", entityId: "vent_2", text: "near a bottle", sources: [crop, laterCrop] }),
        item({ id: "vfact_2", kind: "fact", entityId: "vent_2", text: "moving", sources: [laterCrop] }),
        item({ id: "vrule_1", kind: "rule", text: "fewer than 2 bottles", data: { label: "bottle" } }),
        item({ id: "vnote_1", kind: "notification", text: "1 bottle left", sources: [frame] }),
        item({ id: "vnote_2", kind: "notification", text: "1 bottle left", sources: [laterFrame] }),
      ],
      remove: [],
      audits: [{ action: "video.fact.add", subject: "vfact_1", details: { observations: ["vobs_1", "vobs_2"] } }],
    });
    assert.deepEqual(
      (await scoped.readVideoItems({ kinds: ["fact", "rule", "notification", "consolidation"] }))
        .map((found) => found.kind)
        .sort(),
      ["consolidation", "consolidation", "fact", "fact", "notification", "notification", "rule"],
    );
    const [session] = await scoped.readSessions({ keys: ["seg-0"] });
    assert.ok(session);
    await forget(scoped, { session: session.id }, spaces);
    assert.deepEqual(
      (await scoped.readVideoItems({})).map((found) => found.id).sort(),
      ["vcons_vent_2", "vent_2", "vfact_2", "vnote_2", "vobs_2", "vrule_1"],
      "the fact and notification from the forgotten frames went, and the bare entity with its counter; the rule stays",
    );
  });
  test("the notifier's record is saved with a write, replaced per rule, scoped, and goes with its rule and its scope", async (store) => {
    const scoped = store.forScope(scopeA);
    const [frame] = await frames(scoped);
    assert.ok(frame);
    const sent = { ruleId: "vrule_1", holding: true, lastSentMs: base + 18_000, event: 0, sentInEvent: 1 };
    const other = { ruleId: "vrule_2", holding: false, lastSentMs: null, event: 0, sentInEvent: 0 };
    await scoped.commitVideo({
      put: [
        item({ id: "vrule_1", kind: "rule", text: "fewer than 2 bottles" }),
        item({ id: "vrule_2", kind: "rule", text: "tell me when Ana arrives" }),
        item({ id: "vnote_1", kind: "notification", text: "1 bottle left", sources: [frame] }),
      ],
      remove: [],
      audits: [],
      notifier: { stream: "table", rules: [sent, other] },
    });
    assert.deepEqual(await scoped.readNotifierState("table"), [sent, other]);
    assert.deepEqual(await scoped.readNotifierState("door"), [], "per stream");
    assert.deepEqual(await scoped.readNotifierStreams(), ["table"]);
    assert.deepEqual(await store.forScope(scopeC).readNotifierStreams(), [], "another tenant has no sources");
    assert.deepEqual(await store.forScope(scopeC).readNotifierState("table"), [], "another tenant sees nothing");

    // A later write replaces its rules' rows and leaves the others; a refused write changes nothing.
    const cleared = { ...sent, holding: false };
    await scoped.commitVideo({ put: [], remove: [], audits: [], notifier: { stream: "table", rules: [cleared] } });
    await assert.rejects(
      scoped.commitVideo({
        put: [item({ id: "vnote_2", kind: "notification", sources: ["no-such-node"] })],
        remove: [],
        audits: [],
        notifier: { stream: "table", rules: [{ ...sent, lastSentMs: base + 99_000 }] },
      }),
      InputError,
    );
    assert.deepEqual(await scoped.readNotifierState("table"), [cleared, other]);

    // Removing a rule removes its record; forgetting the scope removes the rest.
    await scoped.commitVideo({ put: [], remove: ["vrule_2"], audits: [] });
    assert.deepEqual(await scoped.readNotifierState("table"), [cleared]);
    await forget(scoped, { all: true }, spaces);
    assert.deepEqual(await scoped.readNotifierState("table"), []);
    assert.deepEqual(await scoped.readNotifierStreams(), []);
  });
});
