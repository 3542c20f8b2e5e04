import type { Judgement, JudgeView, RelationJudge } from "../../src/maintain/judge.ts";

/**
 * Calls every later "lives in" record an update of an earlier one, so a test gets a version chain
 * without depending on the comparator's thresholds.
 */
export const livesInJudge: RelationJudge = {
  id: "lives-in",
  async judge(incoming: JudgeView, candidate: JudgeView): Promise<Judgement> {
    const both = /lives in/.test(incoming.routingText) && /lives in/.test(candidate.routingText);
    return both && incoming.timeStartMs > candidate.timeEndMs
      ? { relation: "update", confidence: 0.9, features: {} }
      : { relation: "distinct", confidence: 0.9, features: {} };
  },
};
