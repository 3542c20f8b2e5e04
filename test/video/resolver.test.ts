import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { normalise } from "../../src/core/vectors.ts";
import type { GalleryEntity } from "../../src/video/reid.ts";
import { type ResolveInput, resolveSegment } from "../../src/video/resolver.ts";
import type { PersonSighting, TrackEvidence } from "../../src/video/tracks.ts";
import { defaultIdentityConfig } from "../../src/video/video-config.ts";

/** A unit vector at `angle` from the x axis of a 3-d space: cosines are easy to set. */
const at = (cosineToX: number, side = 1) =>
  normalise(new Float32Array([cosineToX, side * Math.sqrt(1 - cosineToX ** 2), 0]));
const x = new Float32Array([1, 0, 0]);
const z = new Float32Array([0, 0, 1]);

const sighting: PersonSighting = {
  frame: 0,
  timeMs: 0,
  box: [0, 0, 100, 200],
  personScore: 0.9,
  face: null,
  appearance: null,
};

function track(id: string, face: Float32Array | null, options: Partial<TrackEvidence> = {}): TrackEvidence {
  return {
    trackId: id,
    frames: [0],
    faces: face ? [face] : [],
    appearances: [],
    face,
    appearance: null,
    unsafe: [],
    representative: sighting,
    first: sighting,
    last: sighting,
    ...options,
  };
}

let counter = 0;
function input(overrides: Partial<ResolveInput>): ResolveInput {
  return {
    segment: 1,
    tracks: [],
    galleries: [],
    targets: [],
    pending: [],
    config: defaultIdentityConfig,
    newId: (kind) => `${kind}-${++counter}`,
    ...overrides,
  };
}

const ana: GalleryEntity = { id: "ana", name: "Ana", face: [x], appearance: [] };
const bo: GalleryEntity = { id: "bo", name: "Bo", face: [z], appearance: [] };

describe("identity resolver", () => {
  it("unsafe evidence never identifies, however close a gallery is", () => {
    const result = resolveSegment(
      input({ tracks: [track("t0", null, { unsafe: ["face 20 px < 40"] })], galleries: [ana] }),
    );
    assert.equal(result.decisions[0]?.outcome, "unsafe");
    assert.equal(result.decisions[0]?.entityId, null);
    assert.match(result.decisions[0]?.reason ?? "", /face 20 px/);
  });

  it("matches on a strong face, creates an entity when nothing is close, and says why", () => {
    const result = resolveSegment(
      input({ tracks: [track("t0", at(0.8)), track("t1", at(0.1, -1))], galleries: [ana, bo] }),
    );
    assert.deepEqual(
      result.decisions.map((decision) => [decision.outcome, decision.outcome === "new" ? "new" : decision.entityId]),
      [
        ["match", "ana"],
        ["new", "new"],
      ],
    );
    assert.match(result.decisions[0]?.reason ?? "", /face 0\.8 ≥ 0\.6/);
    assert.match(result.decisions[1]?.reason ?? "", /below the weak threshold/);
  });

  it("weak evidence waits: confirmed by a second look it matches, unconfirmed it becomes a new entity", () => {
    const weak = at(0.55);
    const first = resolveSegment(input({ segment: 1, tracks: [track("t0", weak)], galleries: [ana] }));
    assert.equal(first.decisions[0]?.outcome, "pending");
    assert.equal(first.pending.length, 1);
    const confirmed = resolveSegment(
      input({ segment: 2, tracks: [track("t0", weak)], galleries: [ana], pending: first.pending }),
    );
    assert.equal(confirmed.resolved[0]?.outcome, "match");
    assert.equal(confirmed.resolved[0]?.entityId, "ana");
    assert.equal(confirmed.decisions[0]?.outcome, "match", "the second weak look confirms itself too");
    assert.equal(confirmed.pending.length, 0);

    const lonely = resolveSegment(
      input({ segment: 1 + defaultIdentityConfig.pendingSegments, galleries: [ana], pending: first.pending }),
    );
    assert.equal(lonely.resolved[0]?.outcome, "new");
    const ended = resolveSegment(input({ segment: 2, galleries: [ana], pending: first.pending, final: true }));
    assert.equal(ended.resolved[0]?.outcome, "new", "the end of the stream settles pending evidence");
  });

  it("a face that strongly matches two entities merges the weaker into the stronger", () => {
    const twin: GalleryEntity = { id: "ana-again", name: "", face: [at(0.98)], appearance: [] };
    const result = resolveSegment(input({ tracks: [track("t0", at(0.99))], galleries: [ana, twin] }));
    assert.equal(result.merges.length, 1);
    assert.equal(result.decisions[0]?.outcome, "match");
    assert.deepEqual([result.merges[0]?.from, result.merges[0]?.into].sort(), ["ana", "ana-again"]);
  });

  it("two people in one frame never share an identity", () => {
    const result = resolveSegment(
      input({ tracks: [track("t0", at(0.9)), track("t1", at(0.7, -1))], galleries: [ana] }),
    );
    assert.equal(result.decisions[0]?.entityId, "ana");
    assert.equal(result.decisions[1]?.outcome, "new");
    assert.match(result.decisions[1]?.reason ?? "", /taken by another person in the same frame/);
  });

  it("appearance alone never overrides a face that says otherwise", () => {
    const look = normalise(new Float32Array([0, 1, 0]));
    const dressedAlike: GalleryEntity = { id: "bo", name: "", face: [z], appearance: [look] };
    const result = resolveSegment(
      input({
        tracks: [track("t0", at(0.1, -1), { appearance: look, appearances: [look] })],
        galleries: [dressedAlike],
        targets: [{ entityId: "bo", face: z, appearance: look, lastSegment: 0 }],
      }),
    );
    assert.equal(result.decisions[0]?.outcome, "new", "the face (cosine 0 to bo's) wins over identical clothes");
  });

  it("continuity: weak evidence of a person tracked in the last segment is that person", () => {
    const look = normalise(new Float32Array([0, 1, 0]));
    const result = resolveSegment(
      input({
        segment: 5,
        tracks: [track("t0", null, { appearance: look, appearances: [look] })],
        targets: [
          { entityId: "bo", face: null, appearance: normalise(new Float32Array([0, 0.9, 0.2])), lastSegment: 4 },
        ],
      }),
    );
    assert.equal(result.decisions[0]?.outcome, "match");
    assert.equal(result.decisions[0]?.entityId, "bo");
    assert.match(result.decisions[0]?.reason ?? "", /continues tracked target/);
  });

  it("continuity in place: someone still standing where a target was a moment ago continues it on a weaker look", () => {
    const look = normalise(new Float32Array([0, 1, 0]));
    const similar = normalise(new Float32Array([0.6, 0.8, 0]));
    const target = {
      entityId: "bo",
      face: null,
      appearance: similar,
      lastSegment: 4,
      lastBox: [100, 50, 80, 200] as const,
      lastSeenMs: 40_000,
    };
    const here = { ...sighting, box: [105, 55, 80, 200] as const, timeMs: 42_000 };
    const stayed = resolveSegment(
      input({
        segment: 5,
        tracks: [track("t0", null, { appearance: look, appearances: [look], first: here })],
        targets: [target],
      }),
    );
    assert.equal(stayed.decisions[0]?.entityId, "bo", "cosine 0.8: too weak alone, enough in the same place 2 s later");
    const elsewhere = { ...here, box: [400, 50, 80, 200] as const };
    const moved = resolveSegment(
      input({
        segment: 5,
        tracks: [track("t0", null, { appearance: look, appearances: [look], first: elsewhere })],
        targets: [target],
      }),
    );
    assert.equal(moved.decisions[0]?.outcome, "new", "the same look somewhere else is not continuity");
    const later = { ...here, timeMs: 60_000 };
    const gap = resolveSegment(
      input({
        segment: 5,
        tracks: [track("t0", null, { appearance: look, appearances: [look], first: later })],
        targets: [target],
      }),
    );
    assert.equal(gap.decisions[0]?.outcome, "new", "nor is the same place after a gap");
  });

  describe("a look alone continues a presence, it does not re-identify after a break", () => {
    const look = normalise(new Float32Array([0, 1, 0]));
    const alike = normalise(new Float32Array([0, 0.97, 0.243])); // cosine 0.97 to `look`: dressed alike
    const inBlack: GalleryEntity = { id: "in-black", name: "", face: [], appearance: [alike] };
    const faceless = (first: Partial<PersonSighting> = {}) =>
      track("t0", null, { appearance: look, appearances: [look], first: { ...sighting, ...first } });
    const seen = (lastSegment: number, framesAfter: number) => ({
      entityId: "in-black",
      face: null,
      appearance: alike,
      lastSegment,
      lastSeenMs: 29_000,
      framesAfter,
    });

    it("matches a look when the entity was seen up to the end of the previous analysed segment", () => {
      // The gate may have skipped static segments in between (analysed indices stay adjacent): nothing moved.
      const result = resolveSegment(
        input({ segment: 3, tracks: [faceless({ timeMs: 40_000 })], galleries: [inBlack], targets: [seen(2, 0)] }),
      );
      assert.equal(result.decisions[0]?.outcome, "match");
      assert.equal(result.decisions[0]?.entityId, "in-black");
    });

    it("by default the presence must be unbroken: one missed perceived frame breaks it", () => {
      const missed = resolveSegment(
        input({ segment: 3, tracks: [faceless({ frame: 1 })], galleries: [inBlack], targets: [seen(2, 0)] }),
      );
      assert.equal(missed.decisions[0]?.outcome, "new", "absent from the first frame of this segment");
      assert.match(missed.decisions[0]?.reason ?? "", /appearance 0\.97 for in-black.*does not re-identify/);
      assert.ok(
        missed.decisions[0]?.candidates.some((candidate) => candidate.entityId === "in-black"),
        "the look is still recorded as a candidate for the audit log",
      );
      const gone = resolveSegment(
        input({ segment: 3, tracks: [faceless()], galleries: [inBlack], targets: [seen(2, 1)] }),
      );
      assert.equal(gone.decisions[0]?.outcome, "new", "absent from the last frame of the previous segment");
    });

    it("someone dressed alike after another analysed segment is a new entity, not a wrong match or pending", () => {
      const result = resolveSegment(
        input({ segment: 5, tracks: [faceless()], galleries: [inBlack], targets: [seen(2, 0)] }),
      );
      assert.equal(result.decisions[0]?.outcome, "new");
      assert.equal(result.pending.length, 0);
      const noTarget = resolveSegment(input({ segment: 5, tracks: [faceless()], galleries: [inBlack] }));
      assert.equal(
        noTarget.decisions[0]?.outcome,
        "new",
        "an entity of another stream or an old one: a face is needed",
      );
    });

    it("a face still re-identifies after any break", () => {
      const known: GalleryEntity = { id: "ana", name: "Ana", face: [x], appearance: [alike] };
      const result = resolveSegment(
        input({
          segment: 9,
          tracks: [track("t0", at(0.8), { appearance: look, appearances: [look] })],
          galleries: [known],
        }),
      );
      assert.equal(result.decisions[0]?.entityId, "ana");
      assert.equal(result.decisions[0]?.modality, "face");
    });

    it("the bound is configuration: allowing one missed frame tolerates one, not two", () => {
      const lenient = { ...defaultIdentityConfig, continuityMissedFrames: 1 };
      const one = resolveSegment(
        input({
          segment: 3,
          tracks: [faceless({ frame: 1 })],
          galleries: [inBlack],
          targets: [seen(2, 0)],
          config: lenient,
        }),
      );
      assert.equal(one.decisions[0]?.entityId, "in-black");
      const two = resolveSegment(
        input({
          segment: 3,
          tracks: [faceless({ frame: 1 })],
          galleries: [inBlack],
          targets: [seen(2, 1)],
          config: lenient,
        }),
      );
      assert.equal(two.decisions[0]?.outcome, "new");
    });
  });
});
