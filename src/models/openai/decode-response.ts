import type { z } from "zod";
import { ProviderError } from "../../core/errors.ts";
import { openaiProvider } from "./openai-config.ts";

/** Parses a response body with a schema; failures keep the raw text for whoever debugs the endpoint. */
export function decodeResponse<T>(schema: z.ZodType<T>, input: { body: string; model: string; what: string }): T {
  let value: unknown;
  try {
    value = JSON.parse(input.body);
  } catch (cause) {
    throw new ProviderError(openaiProvider, input.model, `${input.what} is not valid JSON`, {
      body: input.body,
      cause,
    });
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const message = `${input.what} has an unexpected shape: ${describeIssues(parsed.error)}`;
  throw new ProviderError(openaiProvider, input.model, message, { body: input.body, cause: parsed.error });
}

/** The first few schema issues, enough to tell which field an endpoint got wrong. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`)
    .join("; ");
}

export function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  // undici reports "fetch failed" and hides the useful part (ECONNREFUSED, ENOTFOUND…) in `cause`.
  const inner = cause.cause instanceof Error ? ` (${cause.cause.message})` : "";
  return `${cause.message}${inner}`;
}
