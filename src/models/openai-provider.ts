/**
 * The `openai` profile: any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp, LM Studio) for text
 * embeddings, image embeddings and chat with images. Every response is parsed with a schema before it is
 * trusted; anything unexpected becomes a `ProviderError` that keeps the raw body. The parts live in
 * `openai/`: configuration, the HTTP client, embedders, the chat model and the caption reader.
 */
import { createCaptionReader } from "./openai/caption-reader.ts";
import { createOpenAIChatModel } from "./openai/openai-chat-model.ts";
import { createOpenAIClient } from "./openai/openai-client.ts";
import { type OpenAIConfig, type OpenAIModelsOptions, resolveOpenAIConfig } from "./openai/openai-config.ts";
import { createImageEmbedder, createTextEmbedder, type EmbedderSettings } from "./openai/openai-embedders.ts";
import type { ChatModel, Models } from "./provider.ts";

export type { OpenAIModelsOptions } from "./openai/openai-config.ts";

/**
 * Models backed by an OpenAI-compatible HTTP endpoint. Nothing is fetched until a model is used.
 *
 * @example
 * const models = createOpenAIModels({
 *   baseUrl: "http://localhost:11434/v1",
 *   textModel: "nomic-embed-text",
 *   textDimensions: 768,
 *   chatModel: "llava",
 *   imageReader: true,
 * });
 * const [vector] = await embedTexts(models.text, ["where did Alice park?"]);
 * await models.close();
 */
export function createOpenAIModels(options: OpenAIModelsOptions): Models {
  const config = resolveOpenAIConfig(options);
  const client = createOpenAIClient(config);
  const chat = config.chatModel === undefined ? undefined : createOpenAIChatModel(client, config.chatModel);
  const image =
    config.imageModel === undefined
      ? undefined
      : createImageEmbedder(client, {
          ...embedderLimits(config),
          model: config.imageModel,
          dimensions: config.imageDimensions,
        });
  return Object.freeze({
    profile: "openai",
    text: createTextEmbedder(client, {
      ...embedderLimits(config),
      model: config.textModel,
      dimensions: config.textDimensions,
    }),
    // Absent capabilities are left out rather than set to undefined, so `"chat" in models` tells the truth.
    ...(image ? { image } : {}),
    ...(chat ? { chat } : {}),
    imageReaders: Object.freeze(chat && config.imageReader ? [createCaptionReader(chat)] : []),
    close: async () => client.close(),
  });
}

/**
 * One chat model on an OpenAI-compatible endpoint, on its own (e.g. the answerer and the judge of
 * the benchmark, which may differ from whatever embeds the memory).
 */
export function createOpenAIChat(
  options: Pick<OpenAIModelsOptions, "baseUrl" | "apiKey" | "fetch" | "timeoutMs" | "maxRetries"> & { model: string },
): { readonly chat: ChatModel; close(): Promise<void> } {
  // The shared configuration also describes an embedder; a chat-only client never calls it.
  const config = resolveOpenAIConfig({
    ...options,
    textModel: options.model,
    textDimensions: 1,
    chatModel: options.model,
  });
  const client = createOpenAIClient(config);
  return { chat: createOpenAIChatModel(client, options.model), close: async () => client.close() };
}

function embedderLimits(config: OpenAIConfig): Omit<EmbedderSettings, "model" | "dimensions"> {
  return {
    maxBatchSize: config.maxBatchSize,
    maxParallelCalls: config.maxParallelCalls,
    maxRetries: config.maxRetries,
  };
}
