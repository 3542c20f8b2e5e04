/**
 * The one place that calls embedders. Providers make single calls within the limits they declare as data
 * (`maxBatchSize`, `maxParallelCalls`, `maxRetries` on the seam); this module splits inputs into batches,
 * keeps up to `maxParallelCalls` of them in flight, retries what the provider marks retryable with capped
 * exponential backoff (or the wait the server asked for), and hands vectors back in input order. The same
 * split as the AI SDK's `embedMany` over a model's `doEmbed`.
 */
import { setTimeout as delay } from "node:timers/promises";
import { ProviderError } from "../core/errors.ts";
import type { CallLimits, ImageEmbedder, ModelInfo, TextEmbedder } from "./provider.ts";
import { RetryableProviderError } from "./retryable-provider-error.ts";

/** Extra attempts for an embedder that declares no `maxRetries`: what the openai profile always used. */
export const DEFAULT_MAX_RETRIES = 2;
const BASE_BACKOFF_MS = 250;
/** Caps backoff and server-requested waits alike, so one answer cannot stall ingest for minutes. */
const MAX_BACKOFF_MS = 4_000;

/** Waits `ms`; resolves early (or rejects) when `signal` aborts. Injected by tests so backoff costs no time. */
export type Sleep = (ms: number, signal: AbortSignal | undefined) => Promise<void>;

export interface ModelCallOptions {
  /** Defaults to a real timer. */
  readonly sleep?: Sleep;
  /**
   * Stops waiting between attempts; the last failure is then thrown. An attempt already in flight is the
   * provider's to abort (its timeout, or its `close()`).
   */
  readonly signal?: AbortSignal;
}

export interface RetryOptions extends ModelCallOptions {
  /** Extra attempts after the first, for failures that are `RetryableProviderError`s. */
  readonly maxRetries: number;
}

/** A seam object the core may call in batches: what it is, and the limits it declared. */
export type BatchTarget = ModelInfo & CallLimits;

/**
 * Embeds any number of texts: empty strings are skipped and get no vector (an empty turn has nothing to
 * find), the rest go out in batches of `maxBatchSize`, `maxParallelCalls` at a time, with retries.
 *
 * @example
 * const vectors = await embedTexts(models.text, ["where did Alice park?", "", "the red bicycle"]);
 * // vectors[1] === undefined; vectors.length === 3
 */
export async function embedTexts(
  embedder: TextEmbedder,
  texts: readonly string[],
  options: ModelCallOptions = {},
): Promise<Array<Float32Array | undefined>> {
  const present = texts.flatMap((text, index) => (text === "" ? [] : [{ text, index }]));
  const vectors = await callInBatches(
    embedder,
    present.map(({ text }) => text),
    (batch) => embedder.embed(batch),
    options,
  );
  const byPosition: Array<Float32Array | undefined> = texts.map(() => undefined);
  present.forEach(({ index }, position) => {
    byPosition[index] = vectors[position];
  });
  return byPosition;
}

/**
 * Embeds any number of encoded images (PNG/JPEG/WebP bytes), batched, in parallel and with retries,
 * one vector per image in input order.
 *
 * @example
 * const [vector] = await embedImages(models.image, [pngBytes]);
 */
export async function embedImages(
  embedder: ImageEmbedder,
  images: readonly Uint8Array[],
  options: ModelCallOptions = {},
): Promise<Float32Array[]> {
  return callInBatches(embedder, images, (batch) => embedder.embedImages(batch), options);
}

/**
 * Runs `call` over `items` in batches within `target`'s declared limits and concatenates the answers in
 * input order. Every call must answer one vector per item; a short answer is a `ProviderError`, never a
 * silently shorter result.
 */
export async function callInBatches<T>(
  target: BatchTarget,
  items: readonly T[],
  call: (batch: T[]) => Promise<Float32Array[]>,
  options: ModelCallOptions = {},
): Promise<Float32Array[]> {
  const limits = checkedLimits(target);
  const batches: T[][] = [];
  for (let start = 0; start < items.length; start += limits.maxBatchSize) {
    batches.push(items.slice(start, start + limits.maxBatchSize));
  }
  const retry = { ...options, maxRetries: limits.maxRetries };
  const answers = await mapInParallel(batches, limits.maxParallelCalls, (batch) =>
    withRetries(async () => {
      const vectors = await call(batch);
      if (vectors.length !== batch.length) {
        throw new ProviderError(target.provider, target.id, `expected ${batch.length} vectors, got ${vectors.length}`);
      }
      return vectors;
    }, retry),
  );
  return answers.flat();
}

/**
 * Calls `attempt` until it succeeds, fails with an error that is not a `RetryableProviderError`, or has
 * failed `maxRetries + 1` times; the last failure is thrown as it was. Providers use it for calls that do
 * not go through `callInBatches` (chat completions), so every retry follows one policy.
 *
 * @example
 * const body = await withRetries(() => client.post("/chat/completions", payload), { maxRetries: 2 });
 */
export async function withRetries<T>(attempt: () => Promise<T>, options: RetryOptions): Promise<T> {
  const sleep = options.sleep ?? defaultSleep;
  for (let retry = 0; ; retry += 1) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof RetryableProviderError) || retry >= options.maxRetries) throw error;
      if (options.signal?.aborted) throw error;
      await sleep(retryDelayMs(error, retry), options.signal).catch(() => undefined);
      if (options.signal?.aborted) throw error;
    }
  }
}

/**
 * How long to wait before retry number `retry` (0-based): the server's own request when it made one,
 * otherwise 250 ms doubling per retry; both capped at 4 s.
 */
export function retryDelayMs(error: RetryableProviderError, retry: number): number {
  const wanted = error.retryAfterMs ?? BASE_BACKOFF_MS * 2 ** retry;
  return Math.min(Math.max(0, wanted), MAX_BACKOFF_MS);
}

/**
 * For providers: refuses a single call larger than the declared `maxBatchSize`, which only a caller
 * bypassing `embedTexts`/`embedImages` can make; the provider would otherwise send a request its
 * backend may reject or hold in memory all at once.
 */
export function checkBatchSize(target: BatchTarget, count: number): void {
  if (count <= target.maxBatchSize) return;
  const message = `${count} inputs in one call, but maxBatchSize is ${target.maxBatchSize}; use embedTexts or embedImages from models/model-calls.ts`;
  throw new ProviderError(target.provider, target.id, message);
}

/** Limits as declared, checked: a zero batch size would loop forever, a zero parallelism would never start. */
function checkedLimits(target: BatchTarget): Required<CallLimits> {
  const maxRetries = target.maxRetries ?? DEFAULT_MAX_RETRIES;
  const invalid = (field: string, value: number, rule: string) =>
    new ProviderError(target.provider, target.id, `declares ${field} ${value}, expected ${rule}`);
  if (!isPositiveInteger(target.maxBatchSize)) {
    throw invalid("maxBatchSize", target.maxBatchSize, "a positive integer");
  }
  if (!isPositiveInteger(target.maxParallelCalls)) {
    throw invalid("maxParallelCalls", target.maxParallelCalls, "a positive integer");
  }
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw invalid("maxRetries", maxRetries, "a non-negative integer");
  }
  return { maxBatchSize: target.maxBatchSize, maxParallelCalls: target.maxParallelCalls, maxRetries };
}

function isPositiveInteger(value: number): boolean {
  return Number.isInteger(value) && value >= 1;
}

/**
 * Maps `items` with at most `limit` calls in flight, results in input order. After the first failure no
 * new call starts; the calls already running are awaited (none is left running unobserved) and the first
 * failure is thrown.
 */
async function mapInParallel<T, R>(items: readonly T[], limit: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  const queue = items.entries();
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    // The iterator is shared, so each item is taken by exactly one worker.
    for (const [index, item] of queue) {
      if (failure) return;
      try {
        results[index] = await run(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.error;
  return results;
}

async function defaultSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  await delay(ms, undefined, signal ? { signal } : {});
}
