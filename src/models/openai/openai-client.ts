import { z } from "zod";
import { ProviderError } from "../../core/errors.ts";
import { withRetries } from "../model-calls.ts";
import { RetryableProviderError } from "../retryable-provider-error.ts";
import { describeCause } from "./decode-response.ts";
import { type OpenAIConfig, openaiProvider } from "./openai-config.ts";

/** HTTP statuses another attempt may fix: rate limiting here, and every 5xx (see `httpFailure`). */
const tooManyRequests = 429;
const firstServerError = 500;

export interface OpenAIClient {
  /**
   * One POST of JSON; returns the raw body of a 2xx answer. Failures are `ProviderError`s, and
   * `RetryableProviderError`s where another attempt may succeed: retrying is model-calls.ts's decision.
   */
  post(path: string, model: string, payload: unknown): Promise<string>;
  /** POST with this client's retry budget, for calls that do not go through model-calls.ts (chat). */
  postWithRetries(path: string, model: string, payload: unknown): Promise<string>;
  close(): void;
}

/** The HTTP side of the profile: one endpoint, a timeout per attempt, and failures as typed errors. */
export function createOpenAIClient(config: OpenAIConfig): OpenAIClient {
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
        throw new ProviderError(openaiProvider, model, `${path} timed out after ${config.timeoutMs} ms`, { cause });
      }
      const message = `${path} request failed: ${describeCause(cause)}`;
      throw new RetryableProviderError(openaiProvider, model, message, { cause });
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
  if (status !== tooManyRequests && status < firstServerError) {
    return new ProviderError(openaiProvider, input.model, message, { body: input.body });
  }
  const retryAfterMs = retryAfterMsIn(input.response.headers);
  return new RetryableProviderError(openaiProvider, input.model, message, {
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
  return new ProviderError(openaiProvider, model, "models were closed", { cause });
}
