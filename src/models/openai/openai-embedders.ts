import { z } from "zod";
import { ProviderError } from "../../core/errors.ts";
import { checkBatchSize } from "../model-calls.ts";
import type { ImageEmbedder, TextEmbedder } from "../provider.ts";
import { decodeResponse } from "./decode-response.ts";
import { detectMediaType, imageUrlPart } from "./image-url-part.ts";
import type { OpenAIClient } from "./openai-client.ts";
import { openaiProvider } from "./openai-config.ts";

const embeddingsResponse = z.object({
  data: z.array(z.object({ index: z.number().int().nonnegative(), embedding: z.array(z.number()) })),
});

/** What an embedder of this profile declares: its model and width, and the limits model-calls.ts honours. */
export interface EmbedderSettings {
  readonly model: string;
  readonly dimensions: number;
  readonly maxBatchSize: number;
  readonly maxParallelCalls: number;
  readonly maxRetries: number;
}

export function createTextEmbedder(client: OpenAIClient, settings: EmbedderSettings): TextEmbedder {
  const embedder: TextEmbedder = Object.freeze({
    id: settings.model,
    provider: openaiProvider,
    dimensions: settings.dimensions,
    maxBatchSize: settings.maxBatchSize,
    maxParallelCalls: settings.maxParallelCalls,
    maxRetries: settings.maxRetries,
    async embed(texts: readonly string[]): Promise<Float32Array[]> {
      checkBatchSize(embedder, texts.length);
      if (texts.length === 0) return [];
      return requestEmbeddings(client, settings, { model: settings.model, input: texts });
    },
  });
  return embedder;
}

/**
 * There is no OpenAI wire format for image embeddings; this follows vLLM's multimodal embeddings API, the one
 * OpenAI-compatible server that serves them: a chat-style `messages` array with one image, answering one vector.
 * Hence a batch size of 1, whatever `maxBatchSize` says for text.
 */
export function createImageEmbedder(client: OpenAIClient, settings: EmbedderSettings): ImageEmbedder {
  const embedder: ImageEmbedder = Object.freeze({
    id: settings.model,
    provider: openaiProvider,
    dimensions: settings.dimensions,
    maxBatchSize: 1,
    maxParallelCalls: settings.maxParallelCalls,
    maxRetries: settings.maxRetries,
    async embedImages(images: readonly Uint8Array[]): Promise<Float32Array[]> {
      checkBatchSize(embedder, images.length);
      const [image] = images;
      if (image === undefined) return [];
      const messages = [{ role: "user", content: [imageUrlPart(image, detectMediaType(image))] }];
      return requestEmbeddings(client, settings, { model: settings.model, messages }, 1);
    },
  });
  return embedder;
}

async function requestEmbeddings(
  client: OpenAIClient,
  settings: EmbedderSettings,
  payload: { model: string; input?: readonly string[]; messages?: unknown },
  expected = payload.input?.length ?? 0,
): Promise<Float32Array[]> {
  const body = await client.post("/embeddings", settings.model, payload);
  const response = decodeResponse(embeddingsResponse, { body, model: settings.model, what: "embeddings response" });
  const fail = (message: string) => new ProviderError(openaiProvider, settings.model, message, { body });
  // Checked before mapping: an empty `data` must fail loudly, not come back as zero vectors.
  if (response.data.length !== expected) {
    throw fail(`expected ${expected} embeddings, received ${response.data.length}`);
  }
  // The spec does not promise order, and some servers answer batched requests out of order.
  const items = [...response.data].sort((left, right) => left.index - right.index);
  return items.map((item, position) => {
    if (item.index !== position) throw fail(`embedding indexes are not 0..${expected - 1}`);
    if (item.embedding.length !== settings.dimensions) {
      throw fail(`expected ${settings.dimensions}-d embeddings, received ${item.embedding.length}-d`);
    }
    const unit = unitVector(item.embedding);
    if (!unit) throw fail(`embedding ${position} has zero or non-finite length and cannot be normalised`);
    return unit;
  });
}

/** Servers differ on whether they normalise (llama.cpp and some vLLM poolers do not); cosine search needs unit length. */
function unitVector(values: readonly number[]): Float32Array | undefined {
  const norm = Math.sqrt(values.reduce((sum, value) => sum + value * value, 0));
  if (norm === 0 || !Number.isFinite(norm)) return undefined;
  return Float32Array.from(values, (value) => value / norm);
}
