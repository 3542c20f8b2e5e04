import type { Segment } from "./segmenter.ts";

/**
 * The gate in front of perception: static, silent segments are skipped cheaply, but hard guards
 * always analyse the first segment of an event, any segment with speech, and any segment whose
 * audio could not be processed (Appendix C). Pure.
 */
export interface GateConfig {
  /** Mean frame change (0–1) below which a segment counts as static. */
  readonly staticMotion: number;
  /** Voice (ms) from which a segment counts as having speech. */
  readonly speechMs: number;
}

export const defaultGateConfig: GateConfig = Object.freeze({ staticMotion: 0.012, speechMs: 300 });

export type GateReason = "first-of-event" | "speech" | "audio-failed" | "motion" | "static-silent";

export interface GateDecision {
  readonly analyse: boolean;
  readonly reason: GateReason;
}

export function gateSegment(
  segment: Segment,
  context: { readonly firstOfEvent: boolean },
  config: GateConfig = defaultGateConfig,
): GateDecision {
  if (context.firstOfEvent) return { analyse: true, reason: "first-of-event" };
  if (segment.voicedMs >= config.speechMs) return { analyse: true, reason: "speech" };
  if (segment.audio === "failed") return { analyse: true, reason: "audio-failed" };
  if (segment.motion >= config.staticMotion) return { analyse: true, reason: "motion" };
  return { analyse: false, reason: "static-silent" };
}
