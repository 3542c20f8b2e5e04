import { z } from "zod";
import type { ChatMessage } from "../../models/provider.ts";
import { NOT_MENTIONED } from "./evidence-prompt.ts";

export interface Judgement {
  readonly correct: boolean;
  readonly reason: string;
}

const judgement = z.object({ correct: z.boolean(), reason: z.string() });

/** The structured output the judge must produce; strict-mode servers need every property required. */
export const judgementSchema: Record<string, unknown> = Object.freeze({
  type: "object",
  properties: {
    correct: { type: "boolean", description: "whether the candidate answer matches the gold answer" },
    reason: { type: "string", description: "one short sentence explaining the verdict" },
  },
  required: ["correct", "reason"],
  additionalProperties: false,
});

/** Validates the judge's output; throws on anything but `{ correct: boolean, reason: string }`. */
export function parseJudgement(value: unknown): Judgement {
  const { correct, reason } = judgement.parse(value);
  return { correct, reason };
}

const JUDGE_PROMPT = [
  "You grade answers to questions about a person's conversation history.",
  "You are given the question, the gold answer and a candidate answer.",
  "Mark the candidate correct when it states the same fact as the gold answer, even if it is worded differently,",
  "shorter, longer, or gives a date or number in another format; a candidate that adds detail is still correct as long",
  "as it does not contradict the gold answer. Mark it incorrect when it contradicts the gold answer, misses its key",
  `fact, or hedges between several answers. When the gold answer is "${NOT_MENTIONED}" (or says the information is`,
  "not available), the candidate is correct only if it also declines to answer.",
  'Reply with JSON: {"correct": true or false, "reason": one short sentence}.',
].join(" ");

export function judgeMessages(input: { question: string; goldAnswer: string; candidate: string }): ChatMessage[] {
  return [
    { role: "system", content: JUDGE_PROMPT },
    {
      role: "user",
      content: `Question: ${input.question}\nGold answer: ${input.goldAnswer}\nCandidate answer: ${input.candidate}`,
    },
  ];
}
