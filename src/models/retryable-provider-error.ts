import { ProviderError } from "../core/errors.ts";

/**
 * A provider failure that may succeed if tried again (a 429, a 5xx, a dropped connection). The provider
 * only reports it; `withRetries` in model-calls.ts decides whether and when to try again, so every
 * provider gets the same backoff. Any other `ProviderError` is final.
 *
 * @example
 * throw new RetryableProviderError("openai", model, "/embeddings answered HTTP 429", { body, retryAfterMs: 2_000 });
 */
export class RetryableProviderError extends ProviderError {
  /** The wait the server asked for (e.g. `Retry-After`), uncapped; the core caps it. */
  readonly retryAfterMs: number | undefined;

  constructor(
    provider: string,
    model: string,
    message: string,
    options: { body?: string; cause?: unknown; retryAfterMs?: number } = {},
  ) {
    super(provider, model, message, { body: options.body, cause: options.cause });
    this.retryAfterMs = options.retryAfterMs;
  }
}
