import { cosine, meanVector } from "../core/vectors.ts";
import type { Box, FaceDetection, FrameDetections } from "./perception/detector.ts";
import { contains, iou } from "./perception/frame-crops.ts";
import type { IdentityConfig } from "./video-config.ts";

/**
 * A person seen in one frame: a person box, a face, or both, with the quality checks that decide
 * whether the evidence is safe to identify with. Pure.
 */
export interface PersonSighting {
  /** Index of the frame among the segment's perceived frames. */
  readonly frame: number;
  readonly timeMs: number;
  readonly box: Box;
  readonly personScore: number | null;
  readonly face: (FaceDetection & { readonly sharpness: number; readonly unsafe: readonly string[] }) | null;
  readonly appearance: { readonly vector: Float32Array; readonly unsafe: readonly string[] } | null;
}

export interface Track {
  readonly id: string;
  readonly sightings: readonly PersonSighting[];
}

/** Why a face is not safe to identify with (empty: safe). */
export function faceProblems(face: FaceDetection, sharpnessValue: number, config: IdentityConfig): string[] {
  const problems: string[] = [];
  const side = Math.min(face.box[2], face.box[3]);
  if (side < config.minFacePixels) problems.push(`face ${Math.round(side)} px < ${config.minFacePixels}`);
  if (face.score < config.minFaceScore) problems.push(`face score ${face.score.toFixed(2)} < ${config.minFaceScore}`);
  if (sharpnessValue < config.minSharpness)
    problems.push(`blurred (sharpness ${sharpnessValue.toFixed(1)} < ${config.minSharpness})`);
  return problems;
}

/**
 * Why a person box is not safe to identify by appearance (empty: safe). A box cut off by the left,
 * right or bottom edge of the frame shows part of someone (walking in or out): their look is partial.
 */
export function personProblems(
  box: Box,
  score: number | null,
  config: IdentityConfig,
  frame?: { readonly width: number; readonly height: number },
): string[] {
  const problems: string[] = [];
  if (frame) {
    const margin = 2;
    const cut = box[0] <= margin || box[0] + box[2] >= frame.width - margin || box[1] + box[3] >= frame.height - margin;
    if (cut) problems.push("person cut off by the frame edge");
  }
  const side = Math.min(box[2], box[3]);
  if (side < config.minPersonPixels) problems.push(`person ${Math.round(side)} px < ${config.minPersonPixels}`);
  if (score !== null && score < config.minPersonScore)
    problems.push(`person score ${score.toFixed(2)} < ${config.minPersonScore}`);
  return problems;
}

/**
 * Pairs each face with the person box that holds its centre (the smallest, when boxes overlap);
 * a face without a person box and a person box without a face are sightings too.
 */
export function pairFacesWithPeople(
  detections: FrameDetections,
  minPersonScore: number,
): { box: Box; personScore: number | null; face: FaceDetection | null }[] {
  const people = detections.objects
    .filter((object) => object.label === "person" && object.score >= Math.min(minPersonScore, 0.3))
    .map((object) => ({ box: object.box, personScore: object.score, face: null as FaceDetection | null }));
  const sightings: { box: Box; personScore: number | null; face: FaceDetection | null }[] = [];
  for (const face of detections.faces) {
    const centreX = face.box[0] + face.box[2] / 2;
    const centreY = face.box[1] + face.box[3] / 2;
    const holder = people
      .filter((person) => !person.face && contains(person.box, centreX, centreY))
      .sort((a, b) => a.box[2] * a.box[3] - b.box[2] * b.box[3])[0];
    if (holder) holder.face = face;
    else sightings.push({ box: face.box, personScore: null, face });
  }
  return [...people, ...sightings];
}

/**
 * Cosine of the faces when both have a safe one; else box overlap; else appearance. Null: not the
 * same person. An unsafe face (a back of a head read as a face) says nothing, not even "someone else".
 */
function linkScore(track: PersonSighting, next: PersonSighting, config: IdentityConfig): number | null {
  if (track.face && next.face && track.face.unsafe.length === 0 && next.face.unsafe.length === 0) {
    const similarity = cosine(track.face.descriptor, next.face.descriptor);
    return similarity >= config.faceWeak ? 1 + similarity : null;
  }
  const overlap = iou(track.box, next.box);
  if (overlap >= 0.3) return 0.5 + overlap / 2;
  if (track.appearance && next.appearance) {
    const similarity = cosine(track.appearance.vector, next.appearance.vector);
    if (similarity >= config.appearanceMatch) return similarity / 2;
  }
  return null;
}

/**
 * Links a segment's sightings, frame by frame, into tracks: each sighting joins the best-scoring
 * track not yet extended in its frame, else starts one. Tracks are local to the segment: identity
 * across segments is the resolver's decision.
 */
export function linkTracks(frames: readonly (readonly PersonSighting[])[], config: IdentityConfig): Track[] {
  const tracks: { id: string; sightings: PersonSighting[] }[] = [];
  for (const sightings of frames) {
    const pairs: { track: number; sighting: number; score: number }[] = [];
    sightings.forEach((sighting, index) => {
      tracks.forEach((track, trackIndex) => {
        const last = track.sightings.at(-1);
        if (!last || last.frame === sighting.frame) return;
        const score = linkScore(last, sighting, config);
        if (score !== null) pairs.push({ track: trackIndex, sighting: index, score });
      });
    });
    pairs.sort((a, b) => b.score - a.score);
    const usedTracks = new Set<number>();
    const placed = new Set<number>();
    for (const pair of pairs) {
      if (usedTracks.has(pair.track) || placed.has(pair.sighting)) continue;
      usedTracks.add(pair.track);
      placed.add(pair.sighting);
      const sighting = sightings[pair.sighting];
      if (sighting) tracks[pair.track]?.sightings.push(sighting);
    }
    sightings.forEach((sighting, index) => {
      if (!placed.has(index)) tracks.push({ id: `t${tracks.length}`, sightings: [sighting] });
    });
  }
  return joinDisjointTracks(tracks, config);
}

/**
 * Frames a few seconds apart can break a track (someone walks in, then stands still: the boxes no
 * longer overlap). Two tracks of one segment that never share a frame are joined when their faces
 * match, or, without faces, when their looks agree at the weak appearance threshold.
 */
function joinDisjointTracks(tracks: { id: string; sightings: PersonSighting[] }[], config: IdentityConfig) {
  const joined = [...tracks];
  for (let i = 0; i < joined.length; i++) {
    for (let j = i + 1; j < joined.length; j++) {
      const a = joined[i];
      const b = joined[j];
      if (!a || !b) continue;
      const framesA = new Set(a.sightings.map((sighting) => sighting.frame));
      if (b.sightings.some((sighting) => framesA.has(sighting.frame))) continue;
      const faceA = meanVector(a.sightings.flatMap((sighting) => (sighting.face ? [sighting.face.descriptor] : [])));
      const faceB = meanVector(b.sightings.flatMap((sighting) => (sighting.face ? [sighting.face.descriptor] : [])));
      const lookA = meanVector(
        a.sightings.flatMap((sighting) => (sighting.appearance ? [sighting.appearance.vector] : [])),
      );
      const lookB = meanVector(
        b.sightings.flatMap((sighting) => (sighting.appearance ? [sighting.appearance.vector] : [])),
      );
      const same =
        faceA && faceB
          ? cosine(faceA, faceB) >= config.faceMatch
          : lookA && lookB
            ? cosine(lookA, lookB) >= config.appearanceWeak
            : false;
      if (!same) continue;
      a.sightings = [...a.sightings, ...b.sightings].sort((x, y) => x.frame - y.frame);
      joined.splice(j, 1);
      j -= 1;
    }
  }
  return joined;
}

/** What a track offers the resolver: its safe face and appearance vectors, and why the rest was unsafe. */
export interface TrackEvidence {
  readonly trackId: string;
  /** Frames (segment-local indices) the track was seen in: two tracks sharing a frame are two people. */
  readonly frames: readonly number[];
  /** Safe face descriptors, best quality first. */
  readonly faces: readonly Float32Array[];
  readonly appearances: readonly Float32Array[];
  /** The mean of the safe vectors (unit length), or null. */
  readonly face: Float32Array | null;
  readonly appearance: Float32Array | null;
  readonly unsafe: readonly string[];
  /** The sighting whose crop represents the track: its best safe face, else its largest safe person box. */
  readonly representative: PersonSighting;
  /** The track's first and last sightings: where and when it entered and left this segment's frames. */
  readonly first: PersonSighting;
  readonly last: PersonSighting;
}

export function trackEvidence(track: Track): TrackEvidence {
  const safeFaces = track.sightings
    .filter((sighting) => sighting.face && sighting.face.unsafe.length === 0)
    .sort((a, b) => faceQuality(b) - faceQuality(a));
  const safeAppearances = track.sightings.filter(
    (sighting) => sighting.appearance && sighting.appearance.unsafe.length === 0,
  );
  const unsafe = [
    ...new Set(
      track.sightings.flatMap((sighting) => [...(sighting.face?.unsafe ?? []), ...(sighting.appearance?.unsafe ?? [])]),
    ),
  ];
  const faces = safeFaces.flatMap((sighting) => (sighting.face ? [sighting.face.descriptor] : []));
  const appearances = safeAppearances.flatMap((sighting) => (sighting.appearance ? [sighting.appearance.vector] : []));
  const largest = [...(safeAppearances.length ? safeAppearances : track.sightings)].sort(
    (a, b) => b.box[2] * b.box[3] - a.box[2] * a.box[3],
  )[0];
  const representative = safeFaces[0] ?? largest ?? track.sightings[0];
  const first = track.sightings[0];
  const last = track.sightings.at(-1);
  if (!representative || !first || !last) throw new Error("a track has at least one sighting");
  return {
    trackId: track.id,
    frames: [...new Set(track.sightings.map((sighting) => sighting.frame))],
    faces,
    appearances,
    face: meanVector(faces),
    appearance: meanVector(appearances),
    unsafe,
    representative,
    first,
    last,
  };
}

function faceQuality(sighting: PersonSighting): number {
  const face = sighting.face;
  return face ? face.score * Math.min(face.box[2], face.box[3]) : 0;
}
