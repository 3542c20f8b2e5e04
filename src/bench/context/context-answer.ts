/**
 * Part (c) of the context-manager evaluation: with a chat endpoint configured, the model answers each question
 * from the working context a manager produced (rendered pages and native images as pixels), and the harness's
 * existing judge grades the answer against the dataset's gold. Without an endpoint nothing here runs.
 */

import type { ContextMessage } from "../../context/working-context.ts";
import { ProviderError } from "../../core/errors.ts";
import { countTokens } from "../../core/tokens.ts";
import type { ChatMessage, ChatModel, ChatPart } from "../../models/provider.ts";
import type { AnswerAssessment } from "../answer/answer-judge.ts";
import { judgeAnswer, NOT_MENTIONED } from "../answer/answer-judge.ts";
import type { BenchQuestion } from "../dataset.ts";

export interface ContextAnswerJudge {
  /** Answers `question` from `context` (the working context at the question's time) and judges the answer. */
  assess(context: readonly ContextMessage[], question: BenchQuestion): Promise<AnswerAssessment>;
}

export interface ContextAnswerOptions {
  readonly answerer: ChatModel;
  readonly judge: ChatModel;
  /** Answer length limit (100). */
  readonly maxTokens?: number;
}

const instruction =
  "You are answering a question about the conversation above, using only what it shows: its messages, the pages " +
  "of rendered earlier history and the images in it. Answer in a few words. If the answer is not there, answer " +
  `exactly "${NOT_MENTIONED}".`;

/**
 * The working context as the chat seam's messages: tool results and tool calls become labelled text (the seam
 * has no tool roles), data-URL images become image parts, and for a model without vision each image becomes a
 * placeholder so the model knows something was there.
 */
export function toChatMessages(messages: readonly ContextMessage[], vision: boolean): ChatMessage[] {
  return messages.map((message) => {
    const parts: ChatPart[] = [];
    const label =
      message.role === "tool"
        ? `[tool result for call ${message.tool_call_id ?? ""}] `
        : message.name
          ? `${message.name}: `
          : "";
    if (label) parts.push({ type: "text", text: label.trimEnd() });
    for (const part of typeof message.content === "string"
      ? [{ type: "text" as const, text: message.content }]
      : message.content) {
      if (part.type === "text") parts.push({ type: "text", text: part.text });
      else {
        const match = /^data:([^;,]+);base64,(.*)$/s.exec(part.image_url.url);
        if (vision && match)
          parts.push({
            type: "image",
            mediaType: match[1] ?? "image/png",
            data: Buffer.from(match[2] ?? "", "base64"),
          });
        else parts.push({ type: "text", text: "[an image the reader cannot see]" });
      }
    }
    for (const call of message.tool_calls ?? [])
      parts.push({ type: "text", text: `[tool call ${call.id}] ${call.function.name}(${call.function.arguments})` });
    const role = message.role === "tool" ? "user" : message.role;
    const onlyText = parts.every((part) => part.type === "text");
    return {
      role,
      content: onlyText ? parts.map((part) => (part as { text: string }).text).join("\n") : parts,
    };
  });
}

/**
 * The `--answer` mode of `bench/context.ts`.
 *
 * @example
 * const answers = createContextAnswerJudge({ answerer: chat, judge: chat });
 * const assessment = await answers.assess(workingContext.messages, question);
 */
export function createContextAnswerJudge(options: ContextAnswerOptions): ContextAnswerJudge {
  const { answerer, judge } = options;
  return Object.freeze({
    async assess(context: readonly ContextMessage[], question: BenchQuestion): Promise<AnswerAssessment> {
      const warnings: string[] = [];
      const messages = toChatMessages(context, answerer.supportsImages);
      const images = messages.reduce(
        (sum, message) =>
          sum +
          (typeof message.content === "string" ? 0 : message.content.filter((part) => part.type === "image").length),
        0,
      );
      if (!answerer.supportsImages && context.some((message) => typeof message.content !== "string"))
        warnings.push(`${answerer.id} cannot see images: rendered pages and images were not shown`);
      messages.push({ role: "user", content: `${instruction}\n\nQuestion: ${question.text}` });
      let answer: string;
      try {
        answer = (await answerer.complete(messages, { maxTokens: options.maxTokens ?? 100 })).trim();
      } catch (error) {
        if (error instanceof ProviderError) throw error;
        throw new ProviderError(answerer.provider, answerer.id, `answer failed: ${(error as Error).message}`);
      }
      if (answer === "") throw new ProviderError(answerer.provider, answerer.id, "answer is empty");
      const judgement =
        question.answer === undefined ? null : await judgeAnswer(judge, question, question.answer, answer);
      const promptText = messages
        .flatMap((message) =>
          typeof message.content === "string"
            ? [message.content]
            : message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])),
        )
        .join("\n");
      return {
        questionId: question.id,
        category: question.category,
        answer,
        correct: judgement?.correct ?? null,
        reason: judgement?.reason ?? "the question has no gold answer to judge against",
        promptTokens: countTokens(promptText),
        completionTokens: countTokens(answer),
        estimated: true,
        images,
        warnings,
      };
    },
  });
}
