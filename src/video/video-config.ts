import { defaultGateConfig, type GateConfig } from "./gate.ts";
import { defaultGatewayOptions, type GatewayOptions } from "./gateway.ts";
import { defaultNotifyConfig, type NotifyConfig } from "./procedural/notifier.ts";
import { defaultSegmenterConfig, type SegmenterConfig } from "./segmenter.ts";
import { defaultSemanticConfig, type SemanticConfig } from "./semantic/facts.ts";
import { defaultVoiceActivityConfig, type VoiceActivityConfig } from "./voice-activity.ts";

/**
 * Settings of the video memory (ReflectWorld-MM, DESIGN §4). Thresholds are fixed defaults, not
 * tuned per clip: face cosines of FaceRes descriptors were read off a handful of portrait/frame
 * pairs (same person 0.62–0.83, different people up to 0.57); BlazeFace also fires on the backs of
 * heads at scores 0.49–0.61 (real faces here score 0.7–0.9), hence the face score floor; appearance
 * thresholds are conservative because clothes are shared and change.
 */
export interface IdentityConfig {
  /** Face cosine from which a candidate is a match (with `margin` over the runner-up entity). */
  readonly faceMatch: number;
  /** Face cosine from which a candidate is weak evidence: pending until confirmed. */
  readonly faceWeak: number;
  /** Appearance (person crop) cosine for a match; appearance never merges entities. */
  readonly appearanceMatch: number;
  readonly appearanceWeak: number;
  /** Best candidate must beat the runner-up entity by this much to match. */
  readonly margin: number;
  /** A face matching two entities both at or above this merges them. */
  readonly mergeAt: number;
  /** Unsafe evidence: smaller faces (px, shorter side), lower detector scores, blurrier crops. */
  readonly minFacePixels: number;
  readonly minFaceScore: number;
  readonly minSharpness: number;
  readonly minPersonScore: number;
  readonly minPersonPixels: number;
  /** Gallery slots per entity and modality; a new slot must differ from the existing ones (cosine below `slotNovelty`). */
  readonly slotsPerModality: number;
  readonly slotNovelty: number;
  /** Pending weak evidence waits this many analysed segments of its stream for confirmation, then becomes a new entity. */
  readonly pendingSegments: number;
  /** Pending evidence kept per stream (the working state is bounded). */
  readonly maxPending: number;
  /**
   * Continuity in place: a track that starts within `continuityGapMs` of where (box overlap ≥
   * `continuityOverlap`) a target of the previous segment was last seen continues it when its
   * appearance reaches `appearanceContinuity` (lower than `appearanceWeak`: place and time agree).
   */
  readonly continuityGapMs: number;
  readonly continuityOverlap: number;
  readonly appearanceContinuity: number;
  /**
   * Appearance is short-term evidence: clothes are shared by strangers and changed by the same
   * person. Without a face deciding, a track's look identifies only an entity whose presence it
   * continues without a break: seen in the stream's previous analysed segment (a segment the gate
   * skipped as static is no break: nothing moved in it), and missing from at most
   * `continuityMissedFrames` perceived frames between its last sighting and the track's first (0: seen
   * in the last perceived frame before the track; a frame where the person is gone counts as missed,
   * one where only an unsafe sighting linked to them remains does not). After a
   * break only a face re-identifies; faceless evidence opens a new entity, which a face or a user
   * (`cairn entities merge`) can merge later: a wrong split costs one merge, a wrong merge mixes two
   * people's memories.
   */
  readonly continuityMissedFrames: number;
}

export const defaultIdentityConfig: IdentityConfig = Object.freeze({
  faceMatch: 0.6,
  faceWeak: 0.52,
  appearanceMatch: 0.9,
  appearanceWeak: 0.85,
  margin: 0.03,
  mergeAt: 0.72,
  minFacePixels: 40,
  minFaceScore: 0.65,
  minSharpness: 25,
  minPersonScore: 0.4,
  minPersonPixels: 60,
  slotsPerModality: 6,
  slotNovelty: 0.92,
  pendingSegments: 2,
  maxPending: 8,
  continuityGapMs: 5000,
  continuityOverlap: 0.3,
  appearanceContinuity: 0.7,
  continuityMissedFrames: 0,
});

/** Appendix C's bounds on the per-stream working state. */
export interface WorkingStateConfig {
  readonly summaryWords: number;
  readonly recentSegments: number;
  readonly trackedTargets: number;
  /** A tracked target not seen in this many analysed segments is dropped. */
  readonly targetMissedSegments: number;
  /** An entity not seen for this long (media time) leaves the active set. */
  readonly entityTimeoutMs: number;
  /** An event is rotated (closed, a new one opened) after this many segments. */
  readonly maxEventSegments: number;
  /** Segments skipped as static in a row after which the event closes (nothing is happening). */
  readonly idleSegmentsToClose: number;
}

export const defaultWorkingStateConfig: WorkingStateConfig = Object.freeze({
  summaryWords: 100,
  recentSegments: 3,
  trackedTargets: 8,
  targetMissedSegments: 3,
  entityTimeoutMs: 180_000,
  maxEventSegments: 30,
  idleSegmentsToClose: 1,
});

/** Chapters (the schema level): written when an event closes and a budget of events or an interval is reached. */
export interface ChapterConfig {
  readonly eventsPerChapter: number;
  readonly chapterIntervalMs: number;
}

export const defaultChapterConfig: ChapterConfig = Object.freeze({ eventsPerChapter: 3, chapterIntervalMs: 600_000 });

export interface PerceptionConfig {
  /** Frames of an analysed segment that perception reads (spread over the segment). */
  readonly framesPerSegment: number;
  /** Key frames stored per analysed segment (the frames with the most detections). */
  readonly keyFramesPerSegment: number;
  readonly minObjectScore: number;
  /**
   * Objects counted for rules from this detector score: the detector's own floor, lower than
   * `minObjectScore` because a box missed lowers a count (the rule needs `notify.signalFrames`
   * agreeing frames, which absorbs a stray box).
   */
  readonly countScore: number;
}

export const defaultPerceptionConfig: PerceptionConfig = Object.freeze({
  framesPerSegment: 4,
  keyFramesPerSegment: 1,
  minObjectScore: 0.4,
  countScore: 0.3,
});

export interface VideoConfig {
  readonly gateway: GatewayOptions;
  readonly segmenter: SegmenterConfig;
  readonly voice: VoiceActivityConfig;
  readonly gate: GateConfig;
  readonly perception: PerceptionConfig;
  readonly identity: IdentityConfig;
  readonly working: WorkingStateConfig;
  readonly chapters: ChapterConfig;
  /** Entity facts consolidated from episodes (issue 14). */
  readonly semantic: SemanticConfig;
  /** Rules' signals and the notifier's policy and deliveries (issue 14). */
  readonly notify: NotifyConfig;
}

export const defaultVideoConfig: VideoConfig = Object.freeze({
  gateway: defaultGatewayOptions,
  segmenter: defaultSegmenterConfig,
  voice: defaultVoiceActivityConfig,
  gate: defaultGateConfig,
  perception: defaultPerceptionConfig,
  identity: defaultIdentityConfig,
  working: defaultWorkingStateConfig,
  chapters: defaultChapterConfig,
  semantic: defaultSemanticConfig,
  notify: defaultNotifyConfig,
});

export type VideoConfigInput = { readonly [K in keyof VideoConfig]?: Partial<VideoConfig[K]> };

export function videoConfig(input: VideoConfigInput = {}): VideoConfig {
  const merged = {} as Record<keyof VideoConfig, unknown>;
  for (const key of Object.keys(defaultVideoConfig) as (keyof VideoConfig)[]) {
    merged[key] = Object.freeze({ ...defaultVideoConfig[key], ...input[key] });
  }
  return Object.freeze(merged) as VideoConfig;
}
