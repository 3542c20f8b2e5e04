import { z } from "zod";
import { ConfigError, InputError } from "../core/errors.ts";
import type { Models } from "../models/provider.ts";
import type { ScopedStore } from "../store/store.ts";
import type { VideoItem } from "../store/video-records.ts";
import { type EpisodicLevel, searchLevel, type VideoHit } from "./video-queries.ts";

export interface VideoAnswer {
  readonly question: string;
  readonly answer: string;
  /** The items the answer rests on (ids the model cited that it was shown; others are dropped). */
  readonly cited: readonly VideoItem[];
  /** Everything it was shown, best first per level. */
  readonly evidence: readonly VideoHit[];
  readonly warnings: readonly string[];
}

const answerSchema = z.object({ answer: z.string(), cited: z.array(z.string()) });
const answerSpec = {
  name: "video_answer",
  jsonSchema: {
    type: "object",
    properties: { answer: { type: "string" }, cited: { type: "array", items: { type: "string" } } },
    required: ["answer", "cited"],
    additionalProperties: false,
  },
  parse: (value: unknown) => answerSchema.parse(value),
};

/**
 * The agent's `answer` flow (Appendix D): searches the chosen levels, shows the chat model what it
 * found (ids, times, texts), and returns its answer with the items it cited. Needs a chat model.
 */
export async function answerFromVideo(
  scoped: ScopedStore,
  models: Models,
  question: string,
  options: { readonly levels?: readonly EpisodicLevel[]; readonly limit?: number } = {},
): Promise<VideoAnswer> {
  if (!question.trim()) throw new InputError("question", "must not be empty");
  if (!models.chat) throw new ConfigError(`answering needs a chat model; the ${models.profile} profile has none`);
  const levels = options.levels ?? ["fact", "chapter", "trace", "observation"];
  const evidence: VideoHit[] = [];
  for (const level of levels)
    evidence.push(...(await searchLevel(scoped, models, question, { level, limit: options.limit ?? 6 })));
  const shown = evidence.map((hit) => ({
    id: hit.item.id,
    level: hit.item.kind,
    time: new Date(hit.item.startMs).toISOString(),
    stream: hit.item.stream,
    text: hit.item.text,
    ...(hit.item.kind === "fact" ? { importance: hit.item.data.importance } : {}),
  }));
  const reply = await models.chat.completeJson(
    [
      {
        role: "system",
        content:
          "Answer the question from the video memory items given, and only from them. Cite the ids of the items " +
          "your answer rests on. If they do not answer it, say so and cite nothing.",
      },
      { role: "user", content: JSON.stringify({ question, items: shown }) },
    ],
    answerSpec,
  );
  const byId = new Map(evidence.map((hit) => [hit.item.id, hit.item]));
  const cited = [...new Set(reply.cited)].flatMap((id) => {
    const item = byId.get(id);
    return item ? [item] : [];
  });
  const dropped = reply.cited.filter((id) => !byId.has(id));
  return {
    question,
    answer: reply.answer,
    cited,
    evidence,
    warnings: dropped.length ? [`cited ids it was not shown were dropped: ${dropped.join(", ")}`] : [],
  };
}
