import { ConfigError } from "../../core/errors.ts";

/** The provider name every `ProviderError` of this profile carries. */
export const openaiProvider = "openai";

/** Per attempt, including reading the body: generous, because a local model on a CPU may take tens of seconds. */
const defaultTimeoutMs = 60_000;
/** Two extra attempts ride out a brief 429 or a restarting server without tripling a hopeless wait. */
const defaultMaxRetries = 2;
/** Inputs per embeddings request: far below OpenAI's 2,048, and one request's body and wait stay small locally. */
const defaultMaxBatchSize = 64;
/** Local servers (Ollama, llama.cpp) queue parallel requests anyway; a hosted API with rate limits to spare can take more. */
const defaultMaxParallelCalls = 1;

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

/** `OpenAIModelsOptions` checked, with defaults filled in, frozen. */
export interface OpenAIConfig {
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

/** Checks every option up front, so a misconfigured profile fails at startup with a `ConfigError`. */
export function resolveOpenAIConfig(options: OpenAIModelsOptions): OpenAIConfig {
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
    timeoutMs: positiveInteger("timeoutMs", options.timeoutMs ?? defaultTimeoutMs),
    maxRetries: nonNegativeInteger("maxRetries", options.maxRetries ?? defaultMaxRetries),
    maxBatchSize: positiveInteger("maxBatchSize", options.maxBatchSize ?? defaultMaxBatchSize),
    maxParallelCalls: positiveInteger("maxParallelCalls", options.maxParallelCalls ?? defaultMaxParallelCalls),
  });
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
