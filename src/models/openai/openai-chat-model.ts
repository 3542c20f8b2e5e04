import { z } from "zod";
import { ProviderError } from "../../core/errors.ts";
import type { ChatMessage, ChatModel, ChatPart } from "../provider.ts";
import { decodeResponse, describeCause, describeIssues } from "./decode-response.ts";
import { imageUrlPart } from "./image-url-part.ts";
import type { OpenAIClient } from "./openai-client.ts";
import { openaiProvider } from "./openai-config.ts";

const chatResponse = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullish(), refusal: z.string().nullish() }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
});

type JsonSchemaSpec<T> = { name: string; jsonSchema: Record<string, unknown>; parse: (value: unknown) => T };

/** A chat model on `/chat/completions`: plain completions, and JSON-schema constrained ones parsed with the caller's schema. */
export function createOpenAIChatModel(client: OpenAIClient, model: string): ChatModel {
  return Object.freeze({
    id: model,
    provider: openaiProvider,
    supportsImages: true,
    async complete(messages: readonly ChatMessage[], options?: { maxTokens?: number }): Promise<string> {
      // `max_tokens` rather than `max_completion_tokens`: it is the field every compatible server understands.
      const limits = options?.maxTokens === undefined ? {} : { max_tokens: options.maxTokens };
      return requestCompletion(client, model, { model, messages: toWireMessages(messages), ...limits });
    },
    async completeJson<T>(messages: readonly ChatMessage[], schema: JsonSchemaSpec<T>): Promise<T> {
      const content = await requestCompletion(client, model, {
        model,
        messages: toWireMessages(messages),
        response_format: {
          type: "json_schema",
          json_schema: { name: schema.name, schema: schema.jsonSchema, strict: true },
        },
      });
      return parseStructured(content, { model, schema });
    },
  });
}

async function requestCompletion(
  client: OpenAIClient,
  model: string,
  payload: Record<string, unknown>,
): Promise<string> {
  const body = await client.postWithRetries("/chat/completions", model, payload);
  const response = decodeResponse(chatResponse, { body, model, what: "chat completion" });
  const [choice] = response.choices;
  if (choice?.message.refusal) {
    throw new ProviderError(openaiProvider, model, `model refused: ${choice.message.refusal}`, { body });
  }
  if (!choice?.message.content) {
    const reason = choice?.finish_reason ? ` (finish_reason ${choice.finish_reason})` : "";
    throw new ProviderError(openaiProvider, model, `chat completion has no content${reason}`, { body });
  }
  return choice.message.content;
}

function parseStructured<T>(content: string, input: { model: string; schema: JsonSchemaSpec<T> }): T {
  const name = input.schema.name;
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch (cause) {
    throw new ProviderError(openaiProvider, input.model, `structured output ${name} is not valid JSON`, {
      body: content,
      cause,
    });
  }
  try {
    return input.schema.parse(value);
  } catch (cause) {
    const reason = cause instanceof z.ZodError ? describeIssues(cause) : describeCause(cause);
    throw new ProviderError(openaiProvider, input.model, `structured output ${name} failed validation: ${reason}`, {
      body: content,
      cause,
    });
  }
}

function toWireMessages(messages: readonly ChatMessage[]): unknown[] {
  return messages.map((message) => ({
    role: message.role,
    content: typeof message.content === "string" ? message.content : message.content.map(toWirePart),
  }));
}

function toWirePart(part: ChatPart): unknown {
  return part.type === "text" ? { type: "text", text: part.text } : imageUrlPart(part.data, part.mediaType);
}
