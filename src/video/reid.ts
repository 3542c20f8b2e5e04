import { cosine } from "../core/vectors.ts";
import type { TrackEvidence } from "./tracks.ts";

/**
 * Re-identification as evidence only: scored candidates for a track against every entity's
 * multi-slot galleries. It decides nothing (the resolver does). Pure.
 */
export type Modality = "face" | "appearance";

export interface GalleryEntity {
  readonly id: string;
  readonly name: string;
  readonly face: readonly Float32Array[];
  readonly appearance: readonly Float32Array[];
}

export interface Candidate {
  readonly entityId: string;
  readonly modality: Modality;
  /** Best cosine between the track's safe vectors and the entity's slots of this modality. */
  readonly score: number;
}

/** How many of a track's safe vectors are compared (best quality first), besides their mean. */
const probesPerTrack = 3;

export function proposeCandidates(
  evidence: Pick<TrackEvidence, "faces" | "appearances" | "face" | "appearance">,
  galleries: readonly GalleryEntity[],
): { face: Candidate[]; appearance: Candidate[] } {
  const score = (probes: readonly Float32Array[], slots: readonly Float32Array[]) => {
    let best = Number.NEGATIVE_INFINITY;
    for (const probe of probes) for (const slot of slots) best = Math.max(best, cosine(probe, slot));
    return best;
  };
  const faceProbes = [...(evidence.face ? [evidence.face] : []), ...evidence.faces.slice(0, probesPerTrack)];
  const appearanceProbes = [
    ...(evidence.appearance ? [evidence.appearance] : []),
    ...evidence.appearances.slice(0, probesPerTrack),
  ];
  const rank = (modality: Modality, probes: readonly Float32Array[]) =>
    probes.length === 0
      ? []
      : galleries
          .filter((entity) => entity[modality].length > 0)
          .map((entity) => ({ entityId: entity.id, modality, score: score(probes, entity[modality]) }))
          .sort((a, b) => b.score - a.score);
  return { face: rank("face", faceProbes), appearance: rank("appearance", appearanceProbes) };
}
