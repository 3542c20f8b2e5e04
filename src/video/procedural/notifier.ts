import type { RuleSignal } from "./signals.ts";

/** A source's notification policy (the per-camera policy of ReflectWorld-MM §3.5). */
export interface NotifyPolicy {
  /** After a delivery for a rule, none for the same rule for this long in media time. */
  readonly cooldownMs: number;
  /** At most this many deliveries per rule within one event of the stream. */
  readonly budgetPerEvent: number;
  /** Decide and record, but deliver nothing. */
  readonly muted: boolean;
}

export interface NotifyConfig extends NotifyPolicy {
  /** Consecutive read frames that must agree before a count rule's state changes. */
  readonly signalFrames: number;
  /** Policies by source: the longest prefix of the stream's name that matches wins. */
  readonly sources: Readonly<Record<string, Partial<NotifyPolicy>>>;
  /** When a count rule is active, perception reads this many frames of each analysed segment. */
  readonly focusFramesPerSegment: number;
  /** Webhooks every delivery is posted to (signed with the secret). */
  readonly webhooks: readonly { readonly url: string; readonly secret: string }[];
  /** Webhook attempts per delivery, with back-off doubling from `retryBaseMs`. */
  readonly webhookAttempts: number;
  readonly retryBaseMs: number;
  readonly webhookTimeoutMs: number;
}

export const defaultNotifyConfig: NotifyConfig = Object.freeze({
  cooldownMs: 60_000,
  budgetPerEvent: 3,
  muted: false,
  signalFrames: 2,
  sources: {},
  focusFramesPerSegment: 10,
  webhooks: [],
  webhookAttempts: 4,
  retryBaseMs: 250,
  webhookTimeoutMs: 5_000,
});

export function policyFor(config: NotifyConfig, stream: string): NotifyPolicy {
  const prefix = Object.keys(config.sources)
    .filter((candidate) => stream.startsWith(candidate))
    .sort((a, b) => b.length - a.length)[0];
  const override = prefix === undefined ? {} : (config.sources[prefix] ?? {});
  return {
    cooldownMs: override.cooldownMs ?? config.cooldownMs,
    budgetPerEvent: override.budgetPerEvent ?? config.budgetPerEvent,
    muted: override.muted ?? config.muted,
  };
}

/** What the notifier remembers per rule of a stream: the record of what was recently sent. */
export interface RuleMemory {
  readonly holding: boolean;
  readonly lastSentMs: number | null;
  readonly event: number;
  readonly sentInEvent: number;
}

export type NotifyOutcome = "send" | "suppressed" | "cleared";

export interface NotifyDecision {
  readonly signal: RuleSignal;
  readonly outcome: NotifyOutcome;
  readonly reason: string;
}

/**
 * The deterministic notifier: one decision per signal from the signal, the source's policy and what
 * was recently sent. A condition that starts holding is delivered unless muted, within the cooldown
 * since the rule's last delivery, or over the event's budget; while it keeps holding nothing more is
 * sent (deduplication); when it stops holding the rule re-arms. Pure: state in, state out.
 */
export function decide(
  memory: ReadonlyMap<string, RuleMemory>,
  signals: readonly RuleSignal[],
  policy: NotifyPolicy,
  event: number,
): { decisions: NotifyDecision[]; memory: Map<string, RuleMemory> } {
  const next = new Map(memory);
  const decisions: NotifyDecision[] = [];
  for (const signal of [...signals].sort((a, b) => a.atMs - b.atMs)) {
    const previous = next.get(signal.ruleId) ?? { holding: false, lastSentMs: null, event, sentInEvent: 0 };
    const state = previous.event === event ? previous : { ...previous, event, sentInEvent: 0 };
    if (!signal.holds) {
      if (state.holding)
        decisions.push({ signal, outcome: "cleared", reason: "the condition no longer holds: re-armed" });
      next.set(signal.ruleId, { ...state, holding: false });
      continue;
    }
    if (state.holding) {
      decisions.push({
        signal,
        outcome: "suppressed",
        reason: "duplicate: the condition has held since it was decided",
      });
      continue;
    }
    let reason: string | null = null;
    if (policy.muted) reason = "muted by the source's policy";
    else if (state.lastSentMs !== null && signal.atMs < state.lastSentMs)
      // A restarted watch replaying media the record already covers (the same recording, the same start time).
      reason = `cooldown: ${Math.round((state.lastSentMs - signal.atMs) / 1000)} s before the last delivery (media already decided)`;
    else if (state.lastSentMs !== null && signal.atMs - state.lastSentMs < policy.cooldownMs)
      reason = `cooldown: ${Math.round((signal.atMs - state.lastSentMs) / 1000)} s since the last delivery (< ${policy.cooldownMs / 1000} s)`;
    else if (state.sentInEvent >= policy.budgetPerEvent)
      reason = `budget: ${state.sentInEvent} deliveries in this event already`;
    if (reason) {
      decisions.push({ signal, outcome: "suppressed", reason });
      next.set(signal.ruleId, { ...state, holding: true });
      continue;
    }
    decisions.push({ signal, outcome: "send", reason: "the condition started holding" });
    next.set(signal.ruleId, { holding: true, lastSentMs: signal.atMs, event, sentInEvent: state.sentInEvent + 1 });
  }
  return { decisions, memory: next };
}
