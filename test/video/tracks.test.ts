import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { normalise } from "../../src/core/vectors.ts";
import {
  linkTracks,
  type PersonSighting,
  pairFacesWithPeople,
  personProblems,
  trackEvidence,
} from "../../src/video/tracks.ts";
import { defaultIdentityConfig } from "../../src/video/video-config.ts";

const look = (x: number, y: number) => normalise(new Float32Array([x, y, 0]));

function person(
  frame: number,
  box: readonly [number, number, number, number],
  appearance: Float32Array,
): PersonSighting {
  return {
    frame,
    timeMs: frame * 1000,
    box,
    personScore: 0.9,
    face: null,
    appearance: { vector: appearance, unsafe: [] },
  };
}

describe("tracks within a segment", () => {
  it("links a person across frames by overlap, and joins a walk-in to the same person standing still", () => {
    const walking = person(0, [0, 100, 80, 200], look(1, 0.05));
    const standing = person(2, [300, 50, 80, 200], look(1, 0.1));
    const stillStanding = person(3, [305, 52, 80, 200], look(1, 0.1));
    const tracks = linkTracks([[walking], [standing], [stillStanding]], defaultIdentityConfig);
    assert.equal(tracks.length, 1, "no overlap between walking and standing, but the same look and no shared frame");
    assert.deepEqual(
      tracks[0]?.sightings.map((sighting) => sighting.frame),
      [0, 2, 3],
    );
  });

  it("keeps two people apart: a shared frame, or a different look", () => {
    const a = person(0, [0, 100, 80, 200], look(1, 0));
    const b = person(0, [300, 100, 80, 200], look(1, 0));
    assert.equal(linkTracks([[a, b]], defaultIdentityConfig).length, 2, "two boxes in one frame are two people");
    const c = person(2, [300, 100, 80, 200], look(0, 1));
    assert.equal(linkTracks([[a], [c]], defaultIdentityConfig).length, 2);
  });

  it("pairs a face with the person box that holds it; unsafe sightings leave a track without vectors", () => {
    const descriptor = new Float32Array([1, 0]);
    const pairs = pairFacesWithPeople(
      {
        faces: [{ box: [110, 20, 30, 30], score: 0.9, descriptor }],
        objects: [
          { label: "person", score: 0.9, box: [100, 10, 60, 200] },
          { label: "person", score: 0.9, box: [400, 10, 60, 200] },
        ],
      },
      defaultIdentityConfig.minPersonScore,
    );
    assert.equal(pairs.length, 2);
    assert.equal(pairs[0]?.face?.descriptor, descriptor);
    const unsafe: PersonSighting = {
      frame: 0,
      timeMs: 0,
      box: [0, 0, 20, 30],
      personScore: 0.3,
      face: { box: [0, 0, 10, 10], score: 0.4, descriptor, sharpness: 2, unsafe: ["face 10 px < 40"] },
      appearance: { vector: look(1, 0), unsafe: ["person 20 px < 60"] },
    };
    const evidence = trackEvidence({ id: "t0", sightings: [unsafe] });
    assert.equal(evidence.face, null);
    assert.equal(evidence.appearance, null);
    assert.deepEqual(evidence.unsafe, ["face 10 px < 40", "person 20 px < 60"]);
  });

  it("a person cut off by the frame edge is partial evidence", () => {
    const frame = { width: 640, height: 360 };
    assert.deepEqual(personProblems([200, 20, 100, 300], 0.9, defaultIdentityConfig, frame), []);
    assert.deepEqual(personProblems([200, 100, 100, 260], 0.9, defaultIdentityConfig, frame), [
      "person cut off by the frame edge",
    ]);
    assert.deepEqual(personProblems([0, 20, 100, 300], 0.3, defaultIdentityConfig, frame), [
      "person cut off by the frame edge",
      "person score 0.30 < 0.4",
    ]);
  });

  it("an unsafe face (a back of a head read as a face) does not split one standing person into two tracks", () => {
    const backOfHead = (frame: number, descriptor: Float32Array): PersonSighting => ({
      ...person(frame, [342 + frame, 25, 160, 360], look(1, 0.3 * frame)),
      face: { box: [400, 30, 40, 40], score: 0.5, descriptor, sharpness: 30, unsafe: ["face score 0.50 < 0.65"] },
    });
    // The two "faces" disagree (cosine 0) and the looks differ (below the join threshold); the boxes overlap.
    const tracks = linkTracks(
      [[backOfHead(2, new Float32Array([1, 0]))], [backOfHead(3, new Float32Array([0, 1]))]],
      defaultIdentityConfig,
    );
    assert.equal(tracks.length, 1);
  });
});
