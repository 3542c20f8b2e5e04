/**
 * The model seam. A provider bundles optional capabilities; each declares what it can do
 * as data so the core can batch, skip, and warn without knowing the vendor.
 */

export interface ModelInfo {
  /** Stable id of the model, part of the vector-space name (e.g. `hash-ngram-256`, `use-lite-512`). */
  readonly id: string;
  readonly provider: string;
}

/**
 * How the core may call an embedder, declared as data so batching, parallelism and retries live in one
 * place (`embedTexts` / `embedImages` in model-calls.ts) rather than in every provider.
 */
export interface CallLimits {
  /** Largest batch the provider accepts in one call; the core splits larger inputs. */
  readonly maxBatchSize: number;
  /** Calls the core may keep in flight at once; 1 where the backend would only queue a second one. */
  readonly maxParallelCalls: number;
  /** Extra attempts after a `RetryableProviderError`; model-calls.ts uses 2 when this is left out. */
  readonly maxRetries?: number;
}

export interface TextEmbedder extends ModelInfo, CallLimits {
  readonly dimensions: number;
  /**
   * One call: unit-length vectors, one per input, in input order. At most `maxBatchSize` texts; to embed
   * any number, with parallelism and retries, use `embedTexts(embedder, texts)` from model-calls.ts.
   */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

export interface ImageEmbedder extends ModelInfo, CallLimits {
  readonly dimensions: number;
  /**
   * One call: unit-length vectors for encoded images (PNG/JPEG/WebP bytes), in input order. At most
   * `maxBatchSize` images; `embedImages(embedder, images)` from model-calls.ts takes any number.
   */
  embedImages(images: readonly Uint8Array[]): Promise<Float32Array[]>;
}

/** Image → text the lexical channels can search (OCR, captions from a vision model). */
export interface ImageReader extends ModelInfo {
  /** What kind of text it produces; recorded as the source of image-derived text. */
  readonly produces: "ocr" | "caption";
  readImage(image: Uint8Array): Promise<string>;
}

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string | ChatPart[];
}
export type ChatPart = { type: "text"; text: string } | { type: "image"; mediaType: string; data: Uint8Array };

export interface ChatModel extends ModelInfo {
  readonly supportsImages: boolean;
  /** Plain completion. */
  complete(messages: readonly ChatMessage[], options?: { maxTokens?: number }): Promise<string>;
  /** Structured output constrained by a JSON schema; the result is validated by `parse` before it returns. */
  completeJson<T>(
    messages: readonly ChatMessage[],
    schema: { name: string; jsonSchema: Record<string, unknown>; parse: (value: unknown) => T },
  ): Promise<T>;
}

/** A profile's models. Missing capabilities are allowed and reported as warnings where they matter. */
export interface Models {
  readonly profile: string;
  readonly text: TextEmbedder;
  readonly image?: ImageEmbedder;
  readonly imageReaders: readonly ImageReader[];
  readonly chat?: ChatModel;
  /** Releases workers and native handles. Idempotent. */
  close(): Promise<void>;
}
