import type { AnswerAssessment } from "./answer-judge.ts";
import { NOT_MENTIONED } from "./evidence-prompt.ts";

export interface AnswerSummary {
  /** Questions answered. */
  readonly answered: number;
  /** Answers the judge graded (questions with a gold answer). */
  readonly judged: number;
  readonly correct: number;
  /** correct / judged; null when nothing was judged. */
  readonly accuracy: number | null;
  /** Share of answers that were "not mentioned" (abstentions); null for no answers. */
  readonly abstentionRate: number | null;
  readonly meanPromptTokens: number;
  readonly meanCompletionTokens: number;
  /** True when any token count in the mean is an estimate rather than provider usage. */
  readonly tokensEstimated: boolean;
  readonly imagesMean: number;
}

/** Accuracy and answer cost, overall and per category (sorted by name). Pure. */
export function summariseAnswers(assessments: readonly AnswerAssessment[]): {
  overall: AnswerSummary;
  byCategory: Record<string, AnswerSummary>;
} {
  const groups = new Map<string, AnswerAssessment[]>();
  for (const assessment of assessments) {
    groups.set(assessment.category, [...(groups.get(assessment.category) ?? []), assessment]);
  }
  return {
    overall: summary(assessments),
    byCategory: Object.fromEntries(
      [...groups.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([category, list]) => [category, summary(list)]),
    ),
  };
}

function summary(assessments: readonly AnswerAssessment[]): AnswerSummary {
  const judged = assessments.filter((assessment) => assessment.correct !== null);
  const correct = judged.filter((assessment) => assessment.correct === true).length;
  const abstained = assessments.filter((assessment) => isAbstention(assessment.answer)).length;
  const mean = (values: readonly number[]) =>
    values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;
  return {
    answered: assessments.length,
    judged: judged.length,
    correct,
    accuracy: judged.length === 0 ? null : correct / judged.length,
    abstentionRate: assessments.length === 0 ? null : abstained / assessments.length,
    meanPromptTokens: mean(assessments.map((assessment) => assessment.promptTokens)),
    meanCompletionTokens: mean(assessments.map((assessment) => assessment.completionTokens)),
    tokensEstimated: assessments.some((assessment) => assessment.estimated),
    imagesMean: mean(assessments.map((assessment) => assessment.images)),
  };
}

function isAbstention(answer: string): boolean {
  return (
    answer
      .trim()
      .toLowerCase()
      .replace(/[.!]+$/, "") === NOT_MENTIONED
  );
}
