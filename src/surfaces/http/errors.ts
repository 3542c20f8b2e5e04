import type { ContentfulStatusCode } from "hono/utils/http-status";
import { CairnError, type ErrorCode } from "../../core/errors.ts";
import { IndexVersionConflict } from "../../store/index-records.ts";

/** Failures that only exist over HTTP (authentication, body size, content type, unknown route). */
export type HttpErrorCode =
  | "unauthorized"
  | "forbidden"
  | "host_not_allowed"
  | "origin_not_allowed"
  | "too_large"
  | "unsupported_media_type"
  | "no_route"
  | "not_installed";

export class HttpError extends Error {
  readonly code: HttpErrorCode;
  readonly field: string | undefined;
  constructor(code: HttpErrorCode, message: string, options?: { field?: string }) {
    super(message);
    this.name = "HttpError";
    this.code = code;
    this.field = options?.field;
  }
}

export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly field?: string };
}

const cairnStatus: Record<ErrorCode, ContentfulStatusCode> = {
  input: 400,
  not_found: 404,
  conflict: 409,
  store: 500,
  provider: 502,
  config: 500,
  invariant: 500,
};

const httpStatus: Record<HttpErrorCode, ContentfulStatusCode> = {
  unauthorized: 401,
  forbidden: 403,
  host_not_allowed: 403,
  origin_not_allowed: 403,
  too_large: 413,
  unsupported_media_type: 415,
  no_route: 404,
  not_installed: 501,
};

/**
 * The one place errors become HTTP statuses and bodies. Anything not raised on purpose is a 500
 * whose message does not leak internals; `onUnexpected` gets the original for the log.
 */
export function errorResponse(
  error: unknown,
  onUnexpected: (error: unknown) => void = () => {},
): { status: ContentfulStatusCode; body: ErrorBody } {
  if (error instanceof HttpError) {
    return { status: httpStatus[error.code], body: errorBody(error.code, error.message, error.field) };
  }
  if (error instanceof IndexVersionConflict) {
    // Another process wrote to the same scope while this session was planned: safe to retry.
    return { status: 409, body: errorBody("conflict", `${error.message}; retry the request`) };
  }
  if (CairnError.is(error)) {
    const field = "field" in error && typeof error.field === "string" ? error.field : undefined;
    if (error.code === "store" || error.code === "config" || error.code === "invariant") onUnexpected(error);
    return { status: cairnStatus[error.code] ?? 500, body: errorBody(error.code, error.message, field) };
  }
  onUnexpected(error);
  return { status: 500, body: errorBody("internal", "unexpected server error") };
}

function errorBody(code: string, message: string, field?: string): ErrorBody {
  return { error: field === undefined ? { code, message } : { code, message, field } };
}
