import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { ScopedStore } from "../../src/store/store.ts";
import type { VideoItem } from "../../src/store/video-records.ts";
import { latestObservations, latestTraces } from "../../src/video/semantic/consolidate.ts";
import { sourceOf } from "../../src/video/video-text.ts";
import { scopeA } from "../store/conformance-support.ts";
import { tempDir } from "../support/fixtures.ts";

const startMs = Date.parse("2026-01-01T10:00:00Z");

function item(overrides: Partial<VideoItem> & Pick<VideoItem, "id" | "kind">): VideoItem {
  return {
    stream: null,
    entityId: null,
    startMs,
    endMs: startMs,
    text: "",
    data: {},
    vector: null,
    sources: [],
    ...overrides,
  };
}

/**
 * A long watch as the memory path stores it: two streams of one place (a restarted watch) and one of
 * another, interleaved; per segment a trace and zero to three observations sharing the segment's start
 * time, some of them of the same entity (ids that sort out of time order) and some unidentified.
 */
async function longWatch(scoped: ScopedStore): Promise<void> {
  let seed = 7;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const streams = ["hall.mp4@2026-01-01T10:00:00Z", "door.mp4@2026-01-01T10:00:00Z", "hall.mp4@2026-01-01T11:00:00Z"];
  const put: VideoItem[] = [item({ id: "vent_a", kind: "entity" }), item({ id: "vent_b", kind: "entity" })];
  for (let index = 0; index < 240; index += 1) {
    const stream = streams[Math.floor(index / 80)] as string;
    const span = { startMs: startMs + index * 10_000, endMs: startMs + index * 10_000 + 9_000 };
    // Two segments of different streams may start at the same time: the door camera runs alongside.
    const segmentStart = stream.startsWith("door") && index % 2 === 0 ? startMs + (index - 80) * 10_000 : span.startMs;
    const count = Math.floor(random() * 4);
    for (let k = 0; k < count; k += 1) {
      const entityId = k === 2 ? null : random() < 0.6 ? "vent_a" : "vent_b";
      put.push(
        item({
          id: `vobs_${Math.floor(random() * 1e9).toString(36)}`,
          kind: "observation",
          stream,
          entityId,
          startMs: segmentStart,
          endMs: span.endMs,
          data: { segment: index },
        }),
      );
    }
    put.push(
      item({
        id: `vtrace_${Math.floor(random() * 1e9).toString(36)}`,
        kind: "trace",
        stream,
        startMs: segmentStart,
        endMs: span.endMs,
        data: { segment: index },
      }),
    );
  }
  await scoped.commitVideo({ put, remove: [], audits: [] });
}

describe("bounded reads of the memory path", () => {
  it("the latest observations of an entity are the ones the whole history read kept", async (t) => {
    const store = await SqliteStore.open({ path: tempDir(t) });
    t.after(() => store.close());
    const scoped = store.forScope(scopeA);
    await longWatch(scoped);
    for (const entityId of ["vent_a", "vent_b"]) {
      const all = await scoped.readVideoItems({ kinds: ["observation"], entityIds: [entityId] });
      assert.ok(all.length > 100);
      const newest = all.slice(-3).map((found) => found.id);
      for (const exclude of [new Set<string>(), new Set(newest.slice(-1)), new Set([...newest, "vobs_elsewhere"])])
        for (const count of [1, 5, 40, all.length + 10]) {
          const before = all.filter((found) => !exclude.has(found.id)).slice(-count);
          assert.deepEqual(await latestObservations(scoped, entityId, exclude, count), before);
        }
    }
  });

  it("the latest traces of a place, across its streams and past other places', are the ones the whole read kept", async (t) => {
    const store = await SqliteStore.open({ path: tempDir(t) });
    t.after(() => store.close());
    const scoped = store.forScope(scopeA);
    await longWatch(scoped);
    const all = await scoped.readVideoItems({ kinds: ["trace"] });
    for (const source of ["hall.mp4", "door.mp4", "yard.mp4"]) {
      const mine = all.filter((found) => found.stream !== null && sourceOf(found.stream) === source);
      for (const excludeId of [mine.at(-1)?.id ?? "none", mine[0]?.id ?? "none", "none"])
        for (const count of [1, 3, 40, 90, 500]) {
          const before = mine.filter((found) => found.id !== excludeId).slice(-count);
          assert.deepEqual(await latestTraces(scoped, source, excludeId, count), before);
        }
    }
  });

  it("the items of given segments, read by their start times, are the segment's items in the whole stream", async (t) => {
    const store = await SqliteStore.open({ path: tempDir(t) });
    t.after(() => store.close());
    const scoped = store.forScope(scopeA);
    await longWatch(scoped);
    const observations = await scoped.readVideoItems({ kinds: ["observation"], entityIds: ["vent_a"] });
    for (const stream of ["hall.mp4@2026-01-01T10:00:00Z", "door.mp4@2026-01-01T10:00:00Z"]) {
      const whole = await scoped.readVideoItems({ kinds: ["observation", "trace"], stream });
      const mine = observations.filter((found) => found.stream === stream).slice(-40);
      const read = await scoped.readVideoItems({
        kinds: ["observation", "trace"],
        stream,
        startsAt: [...new Set(mine.map((found) => found.startMs))],
      });
      for (const observation of mine) {
        const ofSegment = (items: readonly VideoItem[]) =>
          items.filter((found) => found.data.segment === observation.data.segment);
        assert.ok(ofSegment(whole).length > 1);
        assert.deepEqual(ofSegment(read), ofSegment(whole));
      }
    }
  });
});
