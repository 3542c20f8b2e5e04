import type { VideoItem } from "../../store/video-records.ts";
import { holds, ruleData } from "./rules.ts";

/**
 * Evidence from perception about a rule: whether its condition holds at a moment of the stream.
 * Signals say what was seen; the notifier alone decides what to deliver (evidence vs decision).
 */
export interface RuleSignal {
  readonly ruleId: string;
  readonly holds: boolean;
  /** Epoch ms on the stream's clock: when the condition started (or stopped) holding. */
  readonly atMs: number;
  /** The count seen (count rules) or 1/0 for an entity present (arrival rules). */
  readonly value: number;
  readonly detail: string;
  /** True when the rule's state changed here; false for a segment where it simply still holds. */
  readonly change: boolean;
}

/** What a count rule carries from one segment to the next: its settled state and the run against it. */
export interface CountCarry {
  readonly holding: boolean;
  readonly against: number;
  readonly sinceMs: number | null;
}

export interface FrameCounts {
  readonly timeMs: number;
  readonly counts: Readonly<Record<string, number>>;
}

/**
 * Count rules over a segment's frames. A state settles only after `frames` consecutive read frames
 * agree (one frame with a bottle hidden by a hand is not a bottle taken): the condition starts
 * holding after `frames` frames satisfying it and stops after `frames` frames contradicting it.
 */
export function countSignals(
  rules: readonly VideoItem[],
  frames: readonly FrameCounts[],
  carry: ReadonlyMap<string, CountCarry>,
  options: { readonly frames: number },
): { signals: RuleSignal[]; carry: Map<string, CountCarry> } {
  const signals: RuleSignal[] = [];
  const next = new Map(carry);
  for (const rule of rules) {
    const { condition } = ruleData(rule);
    if (condition.kind !== "count") continue;
    let state = next.get(rule.id) ?? { holding: false, against: 0, sinceMs: null };
    let changed = false;
    for (const frame of frames) {
      const count = frame.counts[condition.label] ?? 0;
      const satisfied = holds(condition.op, count, condition.value);
      if (satisfied === state.holding) {
        state = { ...state, against: 0, sinceMs: null };
        continue;
      }
      const sinceMs = state.sinceMs ?? frame.timeMs;
      const against = state.against + 1;
      if (against < options.frames) {
        state = { ...state, against, sinceMs };
        continue;
      }
      state = { holding: satisfied, against: 0, sinceMs: null };
      changed = true;
      signals.push({
        ruleId: rule.id,
        holds: satisfied,
        atMs: sinceMs,
        value: count,
        detail: `${count} ${condition.label}${count === 1 ? "" : "s"} in view`,
        change: true,
      });
    }
    const last = frames.at(-1);
    if (!changed && state.holding && last) {
      const count = last.counts[condition.label] ?? 0;
      signals.push({
        ruleId: rule.id,
        holds: true,
        atMs: last.timeMs,
        value: count,
        detail: `${count} ${condition.label}${count === 1 ? "" : "s"} in view`,
        change: false,
      });
    }
    next.set(rule.id, state);
  }
  return { signals, carry: next };
}

/**
 * Arrival rules over a segment's resolved entities: an entity (by id or name) present after a
 * segment without it is an arrival; present again is still there; gone clears it.
 */
export function arrivalSignals(
  rules: readonly VideoItem[],
  present: readonly { readonly id: string; readonly name: string }[],
  wasPresent: ReadonlySet<string>,
  atMs: number,
): RuleSignal[] {
  const signals: RuleSignal[] = [];
  for (const rule of rules) {
    const { condition } = ruleData(rule);
    if (condition.kind !== "arrival") continue;
    const wanted = condition.entity.toLowerCase();
    const here = present.some((entity) => entity.id === condition.entity || entity.name.toLowerCase() === wanted);
    const before = wasPresent.has(rule.id);
    if (!here && !before) continue;
    signals.push({
      ruleId: rule.id,
      holds: here,
      atMs,
      value: here ? 1 : 0,
      detail: here ? `${condition.entity} in view` : `${condition.entity} gone`,
      change: here !== before,
    });
  }
  return signals;
}
