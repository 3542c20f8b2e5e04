/**
 * Answer-and-judge mode of the harness (DESIGN §8): a chat model answers each question from a method's evidence
 * pack, a judge model grades the answer against the dataset's gold. Runs only with an OpenAI-compatible endpoint;
 * the retrieval metrics never depend on it.
 */
import { readFile } from "node:fs/promises";
import { ProviderError } from "../../core/errors.ts";
import { countTokens } from "../../core/tokens.ts";
import { intakeImage } from "../../ingest/image-intake.ts";
import { defaultIngestLimits } from "../../ingest/limits.ts";
import type { ChatModel } from "../../models/provider.ts";
import type { RawNode } from "../../store/records.ts";
import type { BenchQuestion } from "../dataset.ts";
import type { BenchContext, Retrieval } from "../method.ts";
import {
  buildEvidencePrompt,
  imageParts,
  imagesToShow,
  NOT_MENTIONED,
  type PromptImage,
  promptText,
} from "./evidence-prompt.ts";
import { type Judgement, judgeMessages, judgementSchema, parseJudgement } from "./judge-prompt.ts";

export { type AnswerSummary, summariseAnswers } from "./answer-summary.ts";
export { type Judgement, NOT_MENTIONED };

export interface AnswerEvidence {
  /** The pack, best first. */
  readonly nodes: readonly RawNode[];
  /** Original bytes of an image of the pack, by blob hash. */
  readonly imagesFor: (hash: string) => Promise<PromptImage>;
  /** The question's own image, when it has one. */
  readonly queryImage?: PromptImage | null;
}

export interface AnswerResult {
  readonly answer: string;
  /**
   * Prompt text tokens. `ChatModel` reports no usage today, so this is always the o200k count of the prompt's
   * text (image parts not included) and `estimated` is true.
   */
  readonly promptTokens: number;
  /** Tokens of the answer text (o200k), an estimate for the same reason. */
  readonly completionTokens: number;
  readonly estimated: boolean;
  /** Image parts sent (evidence images plus the query image). */
  readonly images: number;
}

/**
 * Asks `chat` to answer `question` from the evidence only, with a short answer or "not mentioned". Evidence turns
 * carry their time, speaker, text and image captions / OCR text; with a vision model the first `maxImages`
 * distinct images of the pack are attached as pixels, in pack order.
 *
 * @example
 * const { answer } = await answerFromEvidence(models.chat, question, {
 *   nodes: retrieval.selected.map((id) => context.nodes.get(id)).filter(Boolean),
 *   imagesFor: (hash) => context.memory.getBlob(context.scope, hash),
 * }, { maxImages: 8 });
 */
export async function answerFromEvidence(
  chat: ChatModel,
  question: Pick<BenchQuestion, "text">,
  evidence: AnswerEvidence,
  options: { readonly maxImages: number; readonly maxTokens?: number },
): Promise<AnswerResult> {
  const vision = chat.supportsImages;
  const hashes = vision ? imagesToShow(evidence.nodes, Math.max(0, options.maxImages)) : [];
  const images = new Map<string, PromptImage>();
  for (const hash of hashes) images.set(hash, await evidence.imagesFor(hash));
  const messages = buildEvidencePrompt({
    question: question.text,
    nodes: evidence.nodes,
    images,
    queryImage: evidence.queryImage ?? null,
    vision,
  });
  let answer: string;
  try {
    answer = (await chat.complete(messages, { maxTokens: options.maxTokens ?? 100 })).trim();
  } catch (error) {
    throw asProviderError(chat, "answer", error);
  }
  if (answer === "") throw new ProviderError(chat.provider, chat.id, "answer is empty");
  return {
    answer,
    promptTokens: countTokens(promptText(messages)),
    completionTokens: countTokens(answer),
    estimated: true,
    images: imageParts(messages),
  };
}

/**
 * Grades `candidate` against `goldAnswer` with structured output `{ correct, reason }`. A judge that fails or
 * answers outside the schema throws `ProviderError` (with the raw output in `body` where there was one): an
 * unjudged answer is never counted as right or wrong.
 */
export async function judgeAnswer(
  judge: ChatModel,
  question: Pick<BenchQuestion, "text">,
  goldAnswer: string,
  candidate: string,
): Promise<Judgement> {
  try {
    return await judge.completeJson(judgeMessages({ question: question.text, goldAnswer, candidate }), {
      name: "judgement",
      jsonSchema: judgementSchema,
      parse: parseJudgement,
    });
  } catch (error) {
    throw asProviderError(judge, "judge", error);
  }
}

export interface AnswerAssessment {
  readonly questionId: string;
  readonly category: string;
  readonly answer: string;
  /** Null when the question has no gold answer: the judge is not asked and accuracy leaves it out. */
  readonly correct: boolean | null;
  readonly reason: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** True when the token counts are o200k estimates of the text rather than the provider's usage. */
  readonly estimated: boolean;
  /** Image parts the reader was shown. */
  readonly images: number;
  readonly warnings: readonly string[];
}

export interface AnswerJudgeOptions {
  readonly answerer: ChatModel;
  readonly judge: ChatModel;
  /** Most evidence images shown as pixels per question (also capped by what the method's pack charged). */
  readonly maxImages: number;
  /** Answer length limit. Default 100. */
  readonly maxTokens?: number;
}

export interface AnswerJudge {
  /**
   * Answers `question` from `retrieval`'s pack and judges the answer. `queryImage` is the question's own image
   * (the bytes the runner already read for `retrieve`); without it, `question.imagePath` is read.
   */
  assess(
    context: BenchContext,
    question: BenchQuestion,
    retrieval: Retrieval,
    queryImage?: Uint8Array | null,
  ): Promise<AnswerAssessment>;
}

/**
 * The harness's `--answer` mode: one `assess` per question per method, after `retrieve`.
 *
 * @example
 * const answers = createAnswerJudge({ answerer: models.chat, judge: models.chat, maxImages: budget.images });
 * const assessment = await answers.assess(context, question, retrieval, queryImage);
 * const { overall, byCategory } = summariseAnswers(assessments);
 */
export function createAnswerJudge(options: AnswerJudgeOptions): AnswerJudge {
  const { answerer, judge } = options;
  return Object.freeze({
    async assess(
      context: BenchContext,
      question: BenchQuestion,
      retrieval: Retrieval,
      queryImage?: Uint8Array | null,
    ): Promise<AnswerAssessment> {
      const warnings: string[] = [];
      const nodes = retrieval.selected.flatMap((id) => {
        const node = context.nodes.get(id);
        if (!node) warnings.push(`pack item ${id} is not a raw node of this history and was left out`);
        return node ? [node] : [];
      });
      // A method that delivered its images as text (caption RAG) paid no image budget and gets no pixels.
      const maxImages = Math.min(options.maxImages, retrieval.images);
      const image = await loadQueryImage(question, queryImage);
      if (image && !answerer.supportsImages) {
        warnings.push(`${answerer.id} cannot see images: the question's image was not shown`);
      }
      const answered = await answerFromEvidence(
        answerer,
        question,
        {
          nodes,
          imagesFor: async (hash) => context.memory.getBlob(context.scope, hash),
          queryImage: image,
        },
        { maxImages, maxTokens: options.maxTokens },
      );
      const judgement =
        question.answer === undefined ? null : await judgeAnswer(judge, question, question.answer, answered.answer);
      return {
        questionId: question.id,
        category: question.category,
        answer: answered.answer,
        correct: judgement?.correct ?? null,
        reason: judgement?.reason ?? "the question has no gold answer to judge against",
        promptTokens: answered.promptTokens,
        completionTokens: answered.completionTokens,
        estimated: answered.estimated,
        images: answered.images,
        warnings,
      };
    },
  });
}

async function loadQueryImage(
  question: BenchQuestion,
  bytes: Uint8Array | null | undefined,
): Promise<PromptImage | null> {
  if (bytes === null || (bytes === undefined && question.imagePath === undefined)) return null;
  const data = bytes ?? new Uint8Array(await readFile(question.imagePath as string));
  // Intake validates the bytes and names their media type, which a data: URL needs.
  const accepted = await intakeImage({ data }, `question ${question.id} image`, { limits: defaultIngestLimits });
  return { data: accepted.data, mediaType: accepted.mediaType };
}

/** Any failure of a model call as `ProviderError`, so the runner can tell "the model failed" from "wrong answer". */
function asProviderError(model: ChatModel, step: string, error: unknown): ProviderError {
  if (error instanceof ProviderError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new ProviderError(model.provider, model.id, `${step} failed: ${message}`, { cause: error });
}
