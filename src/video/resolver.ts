import { cosine } from "../core/vectors.ts";
import type { Box } from "./perception/detector.ts";
import { iou } from "./perception/frame-crops.ts";
import { type Candidate, type GalleryEntity, type Modality, proposeCandidates } from "./reid.ts";
import type { TrackEvidence } from "./tracks.ts";
import type { IdentityConfig } from "./video-config.ts";

/**
 * The one place identity is decided (ReflectWorld-MM §3.2, Appendix C). Re-identification proposes
 * scored candidates; the resolver turns them into a decision per track — match, new entity,
 * pending weak evidence, or unsafe (shown, never identified) — plus merges of entities one face
 * matches strongly at once, each with the reason the audit log records. Pure: state in, decisions
 * and the next state out.
 */
export type Outcome = "match" | "new" | "pending" | "unsafe";

export interface Decision {
  readonly trackId: string;
  readonly outcome: Outcome;
  /** The entity the track is (match, new); null for pending and unsafe evidence. */
  readonly entityId: string | null;
  readonly modality: Modality | null;
  readonly candidates: readonly Candidate[];
  readonly reason: string;
  /** For pending evidence: the id its later resolution names. */
  readonly pendingId?: string;
}

/** A person kept in the working state between segments: cross-segment continuity without a tracker. */
export interface TrackedTarget {
  readonly entityId: string;
  readonly face: Float32Array | null;
  readonly appearance: Float32Array | null;
  /** Analysed segment index in which it was last seen. */
  readonly lastSegment: number;
  /** Where and when (media ms) it was last seen, when known: someone still standing there is still them. */
  readonly lastBox?: Box;
  readonly lastSeenMs?: number;
  /** Perceived frames of that segment after its last sighting (frames it was missed in); unknown counts as none. */
  readonly framesAfter?: number;
}

/** Weak evidence waiting for a second look. */
export interface PendingEvidence {
  readonly id: string;
  readonly candidate: Candidate;
  readonly face: Float32Array | null;
  readonly appearance: Float32Array | null;
  readonly segment: number;
}

export interface PendingResolution {
  readonly pendingId: string;
  readonly outcome: "match" | "new";
  readonly entityId: string;
  readonly reason: string;
}

export interface Merge {
  readonly from: string;
  readonly into: string;
  readonly score: number;
  readonly reason: string;
}

export interface ResolveInput {
  /** Index of this analysed segment in its stream. */
  readonly segment: number;
  readonly tracks: readonly TrackEvidence[];
  readonly galleries: readonly GalleryEntity[];
  readonly targets: readonly TrackedTarget[];
  readonly pending: readonly PendingEvidence[];
  readonly config: IdentityConfig;
  readonly newId: (kind: "entity" | "pending") => string;
  /** The stream ended: every pending evidence is settled now. */
  readonly final?: boolean;
}

export interface ResolveOutput {
  readonly decisions: readonly Decision[];
  readonly merges: readonly Merge[];
  readonly resolved: readonly PendingResolution[];
  readonly pending: readonly PendingEvidence[];
}

const round = (value: number) => Math.round(value * 1000) / 1000;

export function resolveSegment(input: ResolveInput): ResolveOutput {
  const { config } = input;
  const merges: Merge[] = [];
  const merged = new Set<string>();
  const proposals = input.tracks.map((track) => decide(track, input, merges, merged));
  const separated = separateCoOccurring(proposals, input);
  const { resolved, pending, confirming } = settlePending(input, separated);
  // Weak evidence that confirms earlier weak evidence for the same candidate is a match itself.
  const decisions = separated.map((decision, index): Decision => {
    const candidate = decision.candidates[0];
    if (decision.outcome !== "pending" || !confirming.has(index) || !candidate) return decision;
    return {
      trackId: decision.trackId,
      outcome: "match",
      entityId: candidate.entityId,
      modality: candidate.modality,
      candidates: decision.candidates,
      reason: `${decision.reason}; confirms earlier weak evidence for it`,
    };
  });
  const newPending = decisions.flatMap((decision, index): PendingEvidence[] => {
    const track = input.tracks[index];
    const candidate = decision.candidates[0];
    if (decision.outcome !== "pending" || !decision.pendingId || !track || !candidate) return [];
    return [
      { id: decision.pendingId, candidate, face: track.face, appearance: track.appearance, segment: input.segment },
    ];
  });
  // Bounded like the rest of the working state: the oldest pending evidence is settled first.
  const kept = [...pending, ...newPending];
  const overflow = kept.splice(0, Math.max(0, kept.length - config.maxPending));
  for (const evidence of overflow) {
    resolved.push({
      pendingId: evidence.id,
      outcome: "new",
      entityId: input.newId("entity"),
      reason: `pending evidence displaced after ${config.maxPending} newer items`,
    });
  }
  return { decisions, merges, resolved, pending: kept };
}

function decide(track: TrackEvidence, input: ResolveInput, merges: Merge[], merged: Set<string>): Decision {
  const { config } = input;
  const base = { trackId: track.trackId };
  if (!track.face && !track.appearance) {
    return {
      ...base,
      outcome: "unsafe",
      entityId: null,
      modality: null,
      candidates: [],
      reason: `unsafe evidence: ${track.unsafe.join("; ") || "no usable face or person crop"}`,
    };
  }
  const galleries = input.galleries.filter((entity) => !merged.has(entity.id));
  const { face, appearance } = proposeCandidates(track, galleries);
  const faceEntities = new Set(galleries.filter((entity) => entity.face.length > 0).map((entity) => entity.id));
  const [bestFace, secondFace] = face;

  // A face that strongly matches two entities shows they are one: the weaker merges into the stronger.
  if (bestFace && secondFace && secondFace.score >= config.mergeAt && !merged.has(secondFace.entityId)) {
    merged.add(secondFace.entityId);
    merges.push({
      from: secondFace.entityId,
      into: bestFace.entityId,
      score: round(secondFace.score),
      reason: `one face matches both at ${round(bestFace.score)} and ${round(secondFace.score)} (≥ ${config.mergeAt})`,
    });
    return match(base, bestFace, face, `face ${round(bestFace.score)} ≥ ${config.faceMatch}; merged a duplicate`);
  }
  if (bestFace && bestFace.score >= config.faceMatch && bestFace.score - (secondFace?.score ?? -1) >= config.margin) {
    return match(base, bestFace, face, `face ${round(bestFace.score)} ≥ ${config.faceMatch}`);
  }
  // Appearance decides only for entities whose presence this track continues (clothes are short-term evidence),
  // and, with a safe face, only for entities whose face is not known (clothes are shared, faces are not).
  const recent = new Set(input.targets.filter((target) => continuous(target, track, input)).map((t) => t.entityId));
  const appearanceCandidates = appearance.filter(
    (candidate) => recent.has(candidate.entityId) && !(track.face && faceEntities.has(candidate.entityId)),
  );
  const [stale] = appearance.filter(
    (candidate) => !recent.has(candidate.entityId) && !(track.face && faceEntities.has(candidate.entityId)),
  );
  const [bestLook, secondLook] = appearanceCandidates;
  if (
    bestLook &&
    bestLook.score >= config.appearanceMatch &&
    bestLook.score - (secondLook?.score ?? -1) >= config.margin &&
    !(bestFace && bestFace.score >= config.faceWeak && bestFace.entityId !== bestLook.entityId)
  ) {
    return match(
      base,
      bestLook,
      appearanceCandidates,
      `appearance ${round(bestLook.score)} ≥ ${config.appearanceMatch}`,
    );
  }
  const candidates = [...face.slice(0, 3), ...appearanceCandidates.slice(0, 3)];
  const weak =
    bestFace && bestFace.score >= config.faceWeak
      ? bestFace
      : bestLook && bestLook.score >= config.appearanceWeak
        ? bestLook
        : null;
  // Continuity: a person tracked in the last segments of this stream is the same actor on weaker evidence.
  const target = continuing(track, input);
  if (target && (!weak || weak.entityId === target.entityId)) {
    return {
      ...base,
      outcome: "match",
      entityId: target.entityId,
      modality: track.face ? "face" : "appearance",
      candidates,
      reason: `continues tracked target (seen in segment ${target.lastSegment})${weak ? ` with weak ${weak.modality} ${round(weak.score)}` : ""}`,
    };
  }
  if (weak) {
    return {
      ...base,
      outcome: "pending",
      entityId: null,
      modality: weak.modality,
      // The pending evidence is about its first candidate.
      candidates: [weak, ...candidates.filter((candidate) => candidate !== weak)],
      reason: `weak ${weak.modality} evidence ${round(weak.score)} for ${weak.entityId}: pending confirmation`,
      pendingId: input.newId("pending"),
    };
  }
  const best = bestFace ?? bestLook;
  const reasons = [
    best ? `best candidate ${best.entityId} at ${round(best.score)} is below the weak threshold` : "no candidate",
    ...(stale && stale.score >= config.appearanceWeak
      ? [
          `appearance ${round(stale.score)} for ${stale.entityId}, whose presence this track does not continue (${config.continuityMissedFrames} missed frame(s) allowed): a look alone does not re-identify after a break`,
        ]
      : []),
  ];
  return {
    ...base,
    outcome: "new",
    entityId: input.newId("entity"),
    modality: track.face ? "face" : "appearance",
    candidates: stale ? [...candidates, stale] : candidates,
    reason: reasons.join("; "),
  };
}

function match(base: { trackId: string }, best: Candidate, candidates: readonly Candidate[], reason: string): Decision {
  return {
    ...base,
    outcome: "match",
    entityId: best.entityId,
    modality: best.modality,
    candidates: candidates.slice(0, 3),
    reason,
  };
}

/**
 * Whether a track continues a target's presence without a break: the target was seen in the
 * previous analysed segment and missed in at most `continuityMissedFrames` perceived frames between
 * its last sighting and the track's first. Only then may a look alone continue an identity.
 */
function continuous(target: TrackedTarget, track: TrackEvidence, input: ResolveInput): boolean {
  if (input.segment - target.lastSegment > 1) return false;
  return (target.framesAfter ?? 0) + track.first.frame <= input.config.continuityMissedFrames;
}

function continuing(track: TrackEvidence, input: ResolveInput): TrackedTarget | null {
  const { config } = input;
  let best: { target: TrackedTarget; score: number } | null = null;
  for (const target of input.targets) {
    // Continuity bridges one segment to the next, not a gap: after that, only a face re-identifies.
    if (!continuous(target, track, input)) continue;
    const faceScore = track.face && target.face ? cosine(track.face, target.face) : null;
    // A face that disagrees outweighs similar clothes.
    if (faceScore !== null && faceScore < config.faceWeak) continue;
    const lookScore = track.appearance && target.appearance ? cosine(track.appearance, target.appearance) : null;
    // Seen in the same place moments after the target was last seen there: a lower bar for the look.
    const stayed =
      target.lastBox !== undefined &&
      target.lastSeenMs !== undefined &&
      track.first.timeMs - target.lastSeenMs <= config.continuityGapMs &&
      iou(track.first.box, target.lastBox) >= config.continuityOverlap;
    const lookBar = stayed ? config.appearanceContinuity : config.appearanceWeak;
    const score =
      faceScore !== null && faceScore >= config.faceWeak
        ? 1 + faceScore
        : lookScore !== null && lookScore >= lookBar
          ? lookScore
          : null;
    if (score !== null && (!best || score > best.score)) best = { target, score };
  }
  return best?.target ?? null;
}

/**
 * Two tracks seen in the same frame are two people: if both resolved to one entity, the weaker
 * keeps nothing of that decision and becomes a new entity (its evidence was enough to identify, but
 * the entity is taken).
 */
function separateCoOccurring(decisions: readonly Decision[], input: ResolveInput): Decision[] {
  const result = [...decisions];
  const strength = (decision: Decision) =>
    decision.candidates.find((c) => c.entityId === decision.entityId)?.score ?? 0;
  for (let i = 0; i < result.length; i++) {
    for (let j = i + 1; j < result.length; j++) {
      const a = result[i];
      const b = result[j];
      if (!a || !b || a.outcome !== "match" || b.outcome !== "match" || a.entityId !== b.entityId) continue;
      const shareFrame = input.tracks[i]?.frames.some((frame) => input.tracks[j]?.frames.includes(frame)) ?? false;
      if (!shareFrame) continue;
      const weaker = strength(a) >= strength(b) ? j : i;
      const loser = result[weaker];
      if (!loser) continue;
      result[weaker] = {
        ...loser,
        outcome: "new",
        entityId: input.newId("entity"),
        reason: `${loser.entityId} is taken by another person in the same frame (${loser.reason})`,
      };
    }
  }
  return result;
}

/**
 * Pending evidence is confirmed when a later segment of the stream shows the same person (its face
 * or appearance matches the pending vectors) resolved to the pending candidate, or weakly pointing
 * at it again; it becomes a new entity when it waited `pendingSegments` without confirmation, or
 * when the stream ends.
 */
function settlePending(
  input: ResolveInput,
  decisions: readonly Decision[],
): { resolved: PendingResolution[]; pending: PendingEvidence[]; confirming: Set<number> } {
  const { config } = input;
  const resolved: PendingResolution[] = [];
  const pending: PendingEvidence[] = [];
  const confirming = new Set<number>();
  for (const evidence of input.pending) {
    const confirmingIndex = decisions.findIndex((decision, index) => {
      const track = input.tracks[index];
      if (!track) return false;
      const pointsAt =
        decision.entityId === evidence.candidate.entityId ||
        (decision.outcome === "pending" && decision.candidates[0]?.entityId === evidence.candidate.entityId);
      if (!pointsAt) return false;
      const sameFace = track.face && evidence.face ? cosine(track.face, evidence.face) >= config.faceMatch : false;
      const sameLook =
        track.appearance && evidence.appearance
          ? cosine(track.appearance, evidence.appearance) >= config.appearanceMatch
          : false;
      return sameFace || sameLook;
    });
    const confirmation = decisions[confirmingIndex];
    if (confirmation) {
      confirming.add(confirmingIndex);
      resolved.push({
        pendingId: evidence.id,
        outcome: "match",
        entityId: evidence.candidate.entityId,
        reason: `weak ${evidence.candidate.modality} ${round(evidence.candidate.score)} confirmed in segment ${input.segment} (${confirmation.reason})`,
      });
    } else if (input.final || input.segment - evidence.segment >= config.pendingSegments) {
      resolved.push({
        pendingId: evidence.id,
        outcome: "new",
        entityId: input.newId("entity"),
        reason: `weak ${evidence.candidate.modality} ${round(evidence.candidate.score)} for ${evidence.candidate.entityId} was never confirmed`,
      });
    } else {
      pending.push(evidence);
    }
  }
  return { resolved, pending, confirming };
}
