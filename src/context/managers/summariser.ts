import { contentWords, extractEntities } from "../../core/text.ts";
import { countTokens, fitTokens } from "../../core/tokens.ts";
import type { ChatModel } from "../../models/provider.ts";
import { messageLabel, messageText, type TrajectoryMessage } from "../trajectory.ts";

/** Writes a summary of `messages`, continuing `previous` (recursive summarisation), in at most `maxTokens`. */
export interface Summariser {
  readonly name: string;
  summarise(previous: string | undefined, messages: readonly TrajectoryMessage[], maxTokens: number): Promise<string>;
}

/**
 * The model-free default: picks the sentences (of the previous summary and the new messages) that carry the
 * rarest content words, names and numbers, and keeps them in their original order, each with its message's
 * role label. Deterministic; no model call.
 */
export const extractiveSummariser: Summariser = {
  name: "extractive",
  async summarise(previous, messages, maxTokens) {
    const candidates: { text: string; order: number }[] = [];
    for (const line of (previous ?? "").split("\n"))
      if (line.trim()) candidates.push({ text: line, order: candidates.length });
    for (const message of messages) {
      const label = `[${message.id} ${messageLabel(message)}]`;
      for (const sentence of sentencesOf(messageText(message, { captions: true }))) {
        candidates.push({ text: `${label} ${sentence}`, order: candidates.length });
      }
    }
    const words = candidates.map((candidate) => new Set(contentWords(candidate.text.replace(/^\[[^\]]*\]\s*/, ""))));
    const documentFrequency = new Map<string, number>();
    for (const set of words)
      for (const word of set) documentFrequency.set(word, (documentFrequency.get(word) ?? 0) + 1);
    const scored = candidates.map((candidate, index) => {
      const set = words[index] ?? new Set<string>();
      let score = 0;
      for (const word of set) score += Math.log(1 + candidates.length / (documentFrequency.get(word) ?? 1));
      score += 2 * extractEntities(candidate.text).length + 2 * (candidate.text.match(/\d+/g)?.length ?? 0);
      return { ...candidate, score: score / Math.sqrt(1 + set.size), tokens: countTokens(candidate.text) + 1 };
    });
    const chosen: typeof scored = [];
    let used = 0;
    for (const candidate of [...scored].sort((a, b) => b.score - a.score || a.order - b.order)) {
      if (candidate.score <= 0 || used + candidate.tokens > maxTokens) continue;
      chosen.push(candidate);
      used += candidate.tokens;
    }
    const text = chosen
      .sort((a, b) => a.order - b.order)
      .map((candidate) => candidate.text)
      .join("\n");
    return fitTokens(text, maxTokens).text;
  },
};

function sentencesOf(text: string): string[] {
  return text
    .split(/\n+|(?<=[.!?])\s+(?=[A-Z0-9"'(])/)
    .map((sentence) => sentence.replace(/\s+/g, " ").trim())
    .filter((sentence) => sentence.length > 0);
}

/** The largest transcript sent to the chat model in one call; older text beyond it is cut (a warning-free cap). */
const maxTranscriptTokens = 48_000;

/**
 * An LLM summariser through any chat model (the `openai` provider): the previous summary plus the new messages
 * in, a summary that keeps names, numbers, decisions and open tasks out, cut to `maxTokens`.
 */
export function chatSummariser(chat: ChatModel): Summariser {
  return {
    name: `chat:${chat.id}`,
    async summarise(previous, messages, maxTokens) {
      const transcript = messages
        .map((message) => `[${message.id} ${messageLabel(message)}] ${messageText(message, { captions: true })}`)
        .join("\n");
      const cut = transcript.length > 0 ? fitTokens(transcript, maxTranscriptTokens).text : "";
      const answer = await chat.complete(
        [
          {
            role: "system",
            content:
              "You maintain the running summary of an agent's history. Merge the previous summary with the new messages into one summary. " +
              "Keep names, numbers, dates, identifiers, decisions, tool results that matter, and open tasks; label facts with the message id they come from. " +
              `Write at most ${maxTokens} tokens of plain text.`,
          },
          { role: "user", content: `Previous summary:\n${previous ?? "(none)"}\n\nNew messages:\n${cut}` },
        ],
        { maxTokens },
      );
      return fitTokens(answer.trim(), maxTokens).text;
    },
  };
}
