/**
 * The `openai` profile: any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp, LM Studio) for text
 * embeddings, image embeddings and chat with images. Every response is parsed with a schema before it is
 * trusted; anything unexpected becomes a `ProviderError` that keeps the raw body.
 */
import { z } from "zod";
import { ConfigError, InputError, ProviderError } from "../core/errors.ts";
import { checkBatchSize, withRetries } from "./model-calls.ts";
import type { ChatMessage, ChatModel, ChatPart, ImageEmbedder, ImageReader, Models, TextEmbedder } from "./provider.ts";
import { RetryableProviderError } from "./retryable-provider-error.ts";

const PROVIDER = "openai";

export interface OpenAIModelsOptions {
  /** Endpoint root including its version path, e.g. `https://api.openai.com/v1`, `http://localhost:11434/v1`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …` when set; local servers usually need none. */
  apiKey?: string;
  /** Embeddings model for text. */
  textModel: string;
  /** Width the text model returns; every vector is checked against it. */
  textDimensions: number;
  /** Embeddings model that accepts images; without it the profile has no image embedder. */
  imageModel?: string;
  /** Width of image vectors; defaults to `textDimensions` because joint text–image models share one width. */
  imageDimensions?: number;
  /** Chat model that accepts images; without it the profile has no chat model. */
  chatModel?: string;
  /** Also caption images with the chat model, so image content becomes searchable text. */
  imageReader?: boolean;
  fetch?: typeof fetch;
  /** Per attempt, including reading the body. Default 60 000. */
  timeoutMs?: number;
  /** Extra attempts after a 429, a 5xx or a network failure (made by model-calls.ts). Default 2. */
  maxRetries?: number;
  /** Inputs per embeddings request. Default 64. */
  maxBatchSize?: number;
  /**
   * Embeddings requests in flight at once. Default 1: local servers (Ollama, llama.cpp) queue parallel
   * requests anyway; a hosted API with rate limits to spare can take more.
   */
  maxParallelCalls?: number;
}

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
  const config = resolveConfig(options);
  const client = createClient(config);
  const chat = config.chatModel === undefined ? undefined : createChatModel(client, config.chatModel);
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
  const config = resolveConfig({ ...options, textModel: options.model, textDimensions: 1, chatModel: options.model });
  const client = createClient(config);
  return { chat: createChatModel(client, options.model), close: async () => client.close() };
}

// ─── Configuration ──────────────────────────────────────────────────────────────────────────────

interface Config {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly textModel: string;
  readonly textDimensions: number;
  readonly imageModel: string | undefined;
  readonly imageDimensions: number;
  readonly chatModel: string | undefined;
  readonly imageReader: boolean;
  readonly fetch: typeof fetch;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly maxBatchSize: number;
  readonly maxParallelCalls: number;
}

function resolveConfig(options: OpenAIModelsOptions): Config {
  const textDimensions = positiveInteger("textDimensions", options.textDimensions);
  return Object.freeze({
    baseUrl: endpointRoot(options.baseUrl),
    apiKey: options.apiKey || undefined,
    textModel: modelName("textModel", options.textModel),
    textDimensions,
    imageModel: options.imageModel === undefined ? undefined : modelName("imageModel", options.imageModel),
    imageDimensions: positiveInteger("imageDimensions", options.imageDimensions ?? textDimensions),
    chatModel: options.chatModel === undefined ? undefined : modelName("chatModel", options.chatModel),
    imageReader: options.imageReader ?? false,
    fetch: options.fetch ?? globalThis.fetch,
    timeoutMs: positiveInteger("timeoutMs", options.timeoutMs ?? 60_000),
    maxRetries: nonNegativeInteger("maxRetries", options.maxRetries ?? 2),
    maxBatchSize: positiveInteger("maxBatchSize", options.maxBatchSize ?? 64),
    maxParallelCalls: positiveInteger("maxParallelCalls", options.maxParallelCalls ?? 1),
  });
}

function embedderLimits(config: Config): Omit<EmbedderSettings, "model" | "dimensions"> {
  return {
    maxBatchSize: config.maxBatchSize,
    maxParallelCalls: config.maxParallelCalls,
    maxRetries: config.maxRetries,
  };
}

function endpointRoot(baseUrl: string): string {
  // `localhost:11434` parses as a URL with scheme "localhost:", so the scheme is checked too.
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
    throw new ConfigError(`openai baseUrl must be an http(s) URL, got ${JSON.stringify(baseUrl)}`);
  }
  // Paths are appended as `${root}/embeddings`, so a trailing slash would double up.
  return baseUrl.replace(/\/+$/, "");
}

function modelName(field: string, value: string): string {
  if (value.trim() === "") throw new ConfigError(`openai ${field} must not be empty`);
  return value;
}

function positiveInteger(field: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new ConfigError(`openai ${field} must be a positive integer`);
  return value;
}

function nonNegativeInteger(field: string, value: number): number {
  if (!Number.isInteger(value) || value < 0) throw new ConfigError(`openai ${field} must be a non-negative integer`);
  return value;
}

// ─── HTTP: timeouts and errors ──────────────────────────────────────────────────────────────────

interface Client {
  /**
   * One POST of JSON; returns the raw body of a 2xx answer. Failures are `ProviderError`s, and
   * `RetryableProviderError`s where another attempt may succeed: retrying is model-calls.ts's decision.
   */
  post(path: string, model: string, payload: unknown): Promise<string>;
  /** POST with this client's retry budget, for calls that do not go through model-calls.ts (chat). */
  postWithRetries(path: string, model: string, payload: unknown): Promise<string>;
  close(): void;
}

function createClient(config: Config): Client {
  // Aborting this on close stops in-flight requests, so shutdown is not held hostage by a slow endpoint.
  const lifetime = new AbortController();
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (config.apiKey) headers.authorization = `Bearer ${config.apiKey}`;

  async function post(path: string, model: string, payload: unknown): Promise<string> {
    if (lifetime.signal.aborted) throw closedError(model);
    const timeout = AbortSignal.timeout(config.timeoutMs);
    const signal = AbortSignal.any([lifetime.signal, timeout]);
    let response: Response;
    let text: string;
    try {
      response = await config.fetch(`${config.baseUrl}${path}`, {
        method: "POST",
        headers,
        body: JSON.stringify(payload),
        signal,
      });
      text = await response.text();
    } catch (cause) {
      if (lifetime.signal.aborted) throw closedError(model, cause);
      if (timeout.aborted) {
        // A timed-out request is not retryable: a model that was too slow once will most likely be too slow
        // again, and retrying would multiply the caller's wait by maxRetries.
        throw new ProviderError(PROVIDER, model, `${path} timed out after ${config.timeoutMs} ms`, { cause });
      }
      throw new RetryableProviderError(PROVIDER, model, `${path} request failed: ${describeCause(cause)}`, { cause });
    }
    if (response.ok) return text;
    throw httpFailure({ path, model, response, body: text });
  }

  return {
    post,
    async postWithRetries(path, model, payload) {
      try {
        return await withRetries(() => post(path, model, payload), {
          maxRetries: config.maxRetries,
          signal: lifetime.signal,
        });
      } catch (error) {
        // Closing during a backoff ends the wait; say so rather than repeat the failure that started it.
        if (lifetime.signal.aborted) throw closedError(model, error);
        throw error;
      }
    },
    close() {
      lifetime.abort();
    },
  };
}

function httpFailure(input: { path: string; model: string; response: Response; body: string }): ProviderError {
  const { status, statusText } = input.response;
  const detail = errorMessageIn(input.body);
  const message = `${input.path} answered HTTP ${status}${statusText ? ` ${statusText}` : ""}${detail ? `: ${detail}` : ""}`;
  if (status !== 429 && status < 500) return new ProviderError(PROVIDER, input.model, message, { body: input.body });
  const retryAfterMs = retryAfterMsIn(input.response.headers);
  return new RetryableProviderError(PROVIDER, input.model, message, {
    body: input.body,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

const errorEnvelope = z.object({ error: z.union([z.string(), z.object({ message: z.string() })]) });

/** The vendor's own explanation, when the body is the usual `{ error: { message } }` envelope. */
function errorMessageIn(body: string): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    // Only enriches the message; the raw body always travels in `ProviderError.body`.
    return undefined;
  }
  const parsed = errorEnvelope.safeParse(value);
  if (!parsed.success) return undefined;
  return typeof parsed.data.error === "string" ? parsed.data.error : parsed.data.error.message;
}

/** The wait a `Retry-After` in seconds asks for; model-calls.ts caps it. HTTP dates are not honoured. */
function retryAfterMsIn(headers: Headers): number | undefined {
  const seconds = Number(headers.get("retry-after"));
  if (!headers.has("retry-after") || !Number.isFinite(seconds) || seconds < 0) return undefined;
  return seconds * 1_000;
}

function closedError(model: string, cause?: unknown): ProviderError {
  return new ProviderError(PROVIDER, model, "models were closed", { cause });
}

function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  // undici reports "fetch failed" and hides the useful part (ECONNREFUSED, ENOTFOUND…) in `cause`.
  const inner = cause.cause instanceof Error ? ` (${cause.cause.message})` : "";
  return `${cause.message}${inner}`;
}

/** Parses a response body with a schema; failures keep the raw text for whoever debugs the endpoint. */
function decode<T>(schema: z.ZodType<T>, input: { body: string; model: string; what: string }): T {
  let value: unknown;
  try {
    value = JSON.parse(input.body);
  } catch (cause) {
    throw new ProviderError(PROVIDER, input.model, `${input.what} is not valid JSON`, { body: input.body, cause });
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const message = `${input.what} has an unexpected shape: ${describeIssues(parsed.error)}`;
  throw new ProviderError(PROVIDER, input.model, message, { body: input.body, cause: parsed.error });
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`)
    .join("; ");
}

// ─── Embeddings ─────────────────────────────────────────────────────────────────────────────────

const embeddingsResponse = z.object({
  data: z.array(z.object({ index: z.number().int().nonnegative(), embedding: z.array(z.number()) })),
});

interface EmbedderSettings {
  readonly model: string;
  readonly dimensions: number;
  readonly maxBatchSize: number;
  readonly maxParallelCalls: number;
  readonly maxRetries: number;
}

function createTextEmbedder(client: Client, settings: EmbedderSettings): TextEmbedder {
  const embedder: TextEmbedder = Object.freeze({
    id: settings.model,
    provider: PROVIDER,
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
function createImageEmbedder(client: Client, settings: EmbedderSettings): ImageEmbedder {
  const embedder: ImageEmbedder = Object.freeze({
    id: settings.model,
    provider: PROVIDER,
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
  client: Client,
  settings: EmbedderSettings,
  payload: { model: string; input?: readonly string[]; messages?: unknown },
  expected = payload.input?.length ?? 0,
): Promise<Float32Array[]> {
  const body = await client.post("/embeddings", settings.model, payload);
  const response = decode(embeddingsResponse, { body, model: settings.model, what: "embeddings response" });
  const fail = (message: string) => new ProviderError(PROVIDER, settings.model, message, { body });
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

// ─── Chat ───────────────────────────────────────────────────────────────────────────────────────

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

function createChatModel(client: Client, model: string): ChatModel {
  return Object.freeze({
    id: model,
    provider: PROVIDER,
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

async function requestCompletion(client: Client, model: string, payload: Record<string, unknown>): Promise<string> {
  const body = await client.postWithRetries("/chat/completions", model, payload);
  const response = decode(chatResponse, { body, model, what: "chat completion" });
  const [choice] = response.choices;
  if (choice?.message.refusal) {
    throw new ProviderError(PROVIDER, model, `model refused: ${choice.message.refusal}`, { body });
  }
  if (!choice?.message.content) {
    const reason = choice?.finish_reason ? ` (finish_reason ${choice.finish_reason})` : "";
    throw new ProviderError(PROVIDER, model, `chat completion has no content${reason}`, { body });
  }
  return choice.message.content;
}

function parseStructured<T>(content: string, input: { model: string; schema: JsonSchemaSpec<T> }): T {
  const name = input.schema.name;
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch (cause) {
    throw new ProviderError(PROVIDER, input.model, `structured output ${name} is not valid JSON`, {
      body: content,
      cause,
    });
  }
  try {
    return input.schema.parse(value);
  } catch (cause) {
    const reason = cause instanceof z.ZodError ? describeIssues(cause) : describeCause(cause);
    throw new ProviderError(PROVIDER, input.model, `structured output ${name} failed validation: ${reason}`, {
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

/** Images travel inline as data: URLs, the one image form every compatible server accepts. */
function imageUrlPart(data: Uint8Array, mediaType: string): unknown {
  const base64 = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("base64");
  return { type: "image_url", image_url: { url: `data:${mediaType};base64,${base64}` } };
}

// ─── Captions ───────────────────────────────────────────────────────────────────────────────────

const CAPTION_PROMPT =
  "Describe this image in one or two plain sentences: the main subjects, what they are doing, the setting, " +
  "and any clearly legible text. Answer with the description only.";

/** Captions make image content reachable by the lexical channels when no joint text–image vectors exist. */
function createCaptionReader(chat: ChatModel): ImageReader {
  return Object.freeze({
    id: chat.id,
    provider: PROVIDER,
    produces: "caption" as const,
    async readImage(image: Uint8Array): Promise<string> {
      const content: ChatPart[] = [
        { type: "text", text: CAPTION_PROMPT },
        { type: "image", mediaType: detectMediaType(image), data: image },
      ];
      const caption = (await chat.complete([{ role: "user", content }], { maxTokens: 120 })).trim();
      if (caption === "") throw new ProviderError(PROVIDER, chat.id, "caption is empty");
      return caption;
    },
  });
}

/** Readers receive bare bytes, but a data: URL must name its type; the magic numbers tell it. */
function detectMediaType(image: Uint8Array): string {
  const startsWith = (bytes: readonly number[], offset = 0) =>
    bytes.every((byte, index) => image[offset + index] === byte);
  if (startsWith([0x89, 0x50, 0x4e, 0x47])) return "image/png";
  if (startsWith([0xff, 0xd8, 0xff])) return "image/jpeg";
  if (startsWith([0x52, 0x49, 0x46, 0x46]) && startsWith([0x57, 0x45, 0x42, 0x50], 8)) return "image/webp";
  if (startsWith([0x47, 0x49, 0x46, 0x38])) return "image/gif";
  throw new InputError("image", "unsupported image format (expected PNG, JPEG, WebP or GIF bytes)");
}
