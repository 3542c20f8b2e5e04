import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defaultWorkingStateConfig } from "../../src/video/video-config.ts";
import {
  applySegment,
  chapterDue,
  closeEvent,
  emptyWorkingState,
  takeChapter,
  type WorkingState,
} from "../../src/video/working-state.ts";

describe("bounded working state (Appendix C)", () => {
  it("stays within its bounds however long the stream runs", () => {
    const config = defaultWorkingStateConfig;
    let state: WorkingState = emptyWorkingState;
    const sizes: number[] = [];
    for (let segment = 0; segment < 5000; segment++) {
      // Every segment brings three new people and a long summary: the worst case for growth.
      const entities = [`e${segment * 3}`, `e${segment * 3 + 1}`, `e${segment * 3 + 2}`];
      state = applySegment(
        state,
        {
          segment,
          startMs: segment * 10_000,
          endMs: (segment + 1) * 10_000,
          summary: `segment ${segment}: ${"people talking near the table ".repeat(20)}`,
          traceId: `trace-${segment}`,
          entities,
          targets: entities.map((entityId) => ({ entityId, face: null, appearance: null, lastSegment: segment })),
          pending: [],
        },
        config,
      );
      if (chapterDue(state, (segment + 1) * 10_000, { eventsPerChapter: 3, chapterIntervalMs: 600_000 })) {
        state = takeChapter(state).state;
      }
      sizes.push(JSON.stringify(state).length);
    }
    assert.ok(state.targets.length <= config.trackedTargets, "at most 8 tracked targets");
    assert.ok(state.recent.length <= config.recentSegments, "the last 3 segment summaries");
    assert.ok(
      (state.event?.summary.split(/\s+/).length ?? 0) <= config.summaryWords + 1,
      "a ~100-word rolling summary",
    );
    assert.ok(Object.keys(state.active).length <= config.trackedTargets * 4);
    assert.ok((state.event?.traces.length ?? 0) <= config.maxEventSegments);
    assert.ok(state.closed.length < 3, "closed events leave in chapters");
    const early = Math.max(...sizes.slice(100, 200));
    const late = Math.max(...sizes.slice(4900));
    // Ids grow a digit or two over 5,000 segments; the structure must not grow at all.
    assert.ok(late <= early * 1.1, `the state does not grow with the stream (${early} → ${late} bytes)`);
  });

  it("drops targets after missed segments and entities after the inactivity time-out", () => {
    const config = { ...defaultWorkingStateConfig, targetMissedSegments: 2, entityTimeoutMs: 30_000 };
    const seen = (segment: number, entities: string[]) =>
      ({
        segment,
        startMs: segment * 10_000,
        endMs: (segment + 1) * 10_000,
        summary: "s",
        traceId: `t${segment}`,
        entities,
        targets: entities.map((entityId) => ({ entityId, face: null, appearance: null, lastSegment: segment })),
        pending: [],
      }) as const;
    let state = applySegment(emptyWorkingState, seen(0, ["ana"]), config);
    state = applySegment(state, seen(1, ["bo"]), config);
    assert.deepEqual(state.targets.map((target) => target.entityId).sort(), ["ana", "bo"]);
    state = applySegment(state, seen(3, ["bo"]), config);
    assert.deepEqual(
      state.targets.map((target) => target.entityId),
      ["bo"],
      "ana missed two segments",
    );
    state = applySegment(state, seen(7, ["cy"]), config);
    assert.deepEqual(Object.keys(state.active).sort(), ["cy"], "ana and bo timed out after 30 s unseen");
  });

  it("rotates an event that runs too long and closes one when nothing happens", () => {
    const config = { ...defaultWorkingStateConfig, maxEventSegments: 3 };
    let state: WorkingState = emptyWorkingState;
    for (let segment = 0; segment < 7; segment++) {
      state = applySegment(
        state,
        {
          segment,
          startMs: segment,
          endMs: segment + 1,
          summary: "x",
          traceId: `t${segment}`,
          entities: [],
          targets: [],
          pending: [],
        },
        config,
      );
    }
    assert.equal(state.closed.length, 2, "two full events of three segments");
    assert.equal(state.event?.segments, 1);
    state = closeEvent(state);
    assert.equal(state.event, null);
    assert.equal(state.closed.length, 3);
    assert.equal(chapterDue(state, 10, { eventsPerChapter: 3, chapterIntervalMs: 1e9 }), true);
  });
});
