import type { Fused } from "../channels/rrf.ts";
import type { Ranked } from "../core/ranked.ts";
import type { RawNode } from "../store/records.ts";
import { inTimeWindows, type TimeWindow } from "./question-time.ts";

/**
 * Re-ranks the best candidates of a fused list by what the question says beyond its words (issue
 * 19 part 3, decision 024): the session each candidate sits in, the time windows the question
 * names, and the speakers it names. Pure: the caller reads the question and the raw nodes.
 *
 * Each candidate's fused score is scaled by the best one's (so every signal adds on the same
 * [0, 1] scale whatever the fusion), then:
 * - `session` × its session's score: the sum of its session's best `sessionTop` scaled scores
 *   among the candidates, scaled by the best session's. A turn whose session holds other good
 *   hits is more likely the one the question is about than an equally good stray.
 * - `time` if its time falls in one of the question's windows (end stretched by `slackMs`).
 * - `speaker` if it was said by a speaker the question names, when the candidates hold a speaker
 *   it does not name (naming everyone present says nothing).
 * Only the first `depth` candidates with a raw node at hand move; the rest follow in their order.
 * Every weight 0 (or nothing to say) returns the list as it was.
 */
export interface FocusWeights {
  readonly session: number;
  readonly time: number;
  readonly speaker: number;
  readonly slackMs: number;
}

export interface QuestionFocus {
  readonly windows: readonly TimeWindow[];
  readonly speakers: ReadonlySet<string>;
}

/** Turns of one session counted in its score: enough for a few-turn exchange, few enough that a long session does not win by length. */
export const sessionTop = 3;

export function focusRerank(
  ranked: readonly Fused[],
  nodes: ReadonlyMap<string, RawNode>,
  question: QuestionFocus,
  weights: FocusWeights,
  depth: number,
): Fused[] {
  const head: { hit: Fused; node: RawNode; index: number }[] = [];
  const rest: Fused[] = [];
  ranked.forEach((hit, index) => {
    const node = nodes.get(hit.id);
    if (node && head.length < depth) head.push({ hit, node, index });
    else rest.push(hit);
  });
  const top = Math.max(0, ...head.map(({ hit }) => hit.score));
  const useTime = weights.time > 0 && question.windows.length > 0;
  const present = new Set(head.map(({ node }) => node.speaker ?? ""));
  const useSpeaker =
    weights.speaker > 0 &&
    question.speakers.size > 0 &&
    [...present].some((speaker) => !question.speakers.has(speaker));
  if (top <= 0 || (weights.session <= 0 && !useTime && !useSpeaker)) return [...ranked];

  const scaled = head.map(({ hit }) => Math.max(0, hit.score) / top);
  const sessions =
    weights.session > 0
      ? sessionScores(head.map(({ node }, i) => ({ id: node.sessionKey, score: scaled[i] ?? 0 })))
      : null;
  const rescored = head.map(({ hit, node, index }, i) => {
    let score = scaled[i] ?? 0;
    if (sessions) score += weights.session * (sessions.get(node.sessionKey) ?? 0);
    if (useTime && inTimeWindows(Date.parse(node.time), question.windows, weights.slackMs)) score += weights.time;
    if (useSpeaker && node.speaker !== null && question.speakers.has(node.speaker)) score += weights.speaker;
    return { hit: { ...hit, score }, index };
  });
  rescored.sort((a, b) => b.hit.score - a.hit.score || a.index - b.index);
  return [...rescored.map(({ hit }) => hit), ...rest];
}

/** Each session's score: the sum of its best `sessionTop` candidate scores, scaled by the best session's. */
export function sessionScores(candidates: readonly Ranked[]): Map<string, number> {
  const bySession = new Map<string, number[]>();
  for (const { id, score } of candidates) bySession.set(id, [...(bySession.get(id) ?? []), score]);
  const sums = new Map<string, number>();
  for (const [session, scores] of bySession) {
    sums.set(
      session,
      scores
        .sort((a, b) => b - a)
        .slice(0, sessionTop)
        .reduce((sum, score) => sum + score, 0),
    );
  }
  const best = Math.max(0, ...sums.values());
  return new Map([...sums].map(([session, sum]) => [session, best > 0 ? sum / best : 0]));
}

/**
 * Reciprocal-rank fusion of the first pass's order with a feedback pass's list (weight `weight`),
 * for pseudo-relevance feedback: what both passes rank high comes first, and the feedback pass can
 * bring in candidates the first missed. Scores are the RRF sums; ties keep the first pass's order.
 */
export function fuseFeedback(first: readonly Fused[], feedback: readonly Ranked[], weight: number, k: number): Fused[] {
  const scores = new Map<string, { hit: Fused; score: number; order: number }>();
  first.forEach((hit, index) => {
    scores.set(hit.id, { hit, score: 1 / (k + index + 1), order: index });
  });
  feedback.forEach((hit, index) => {
    const current = scores.get(hit.id) ?? {
      hit: { id: hit.id, score: 0, channels: {} },
      score: 0,
      order: first.length + index,
    };
    current.score += weight / (k + index + 1);
    scores.set(hit.id, current);
  });
  return [...scores.values()]
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .map(({ hit, score }) => ({ ...hit, score }));
}
