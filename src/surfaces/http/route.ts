import type { Context, Hono } from "hono";
import type { z } from "zod";
import type { KeyStore } from "../../auth/key-store.ts";
import { InputError } from "../../core/errors.ts";
import type { Scope } from "../../core/scope.ts";
import type { Memory } from "../../memory.ts";
import { HttpError } from "./errors.ts";
import { resolveScope, resolveTenant } from "./request-scope.ts";
import { parseWith } from "./schemas.ts";

export type Method = "get" | "post" | "delete";

export interface ResponseDoc {
  readonly description: string;
  /** Response headers worth documenting, with their descriptions. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly schema?: z.ZodTypeAny;
  /** Defaults to application/json; binary responses name their type and carry no schema. */
  readonly contentType?: string;
}

/** What the OpenAPI document needs to know about a route. */
export interface RouteDoc {
  readonly method: Method;
  /** Stable: generated clients name their functions after it. */
  readonly operationId: string;
  /** Hono syntax (`/v1/sessions/:id`); OpenAPI's `{id}` is derived. */
  readonly path: string;
  readonly summary: string;
  readonly tag: string;
  /**
   * Needs an API key (unless the server runs with --no-auth). `"tenant"`: a tenant-level request;
   * the handler's scope names the tenant, and the key's user, or "" for a tenant-wide key.
   */
  readonly scoped: boolean | "tenant";
  readonly params?: z.AnyZodObject;
  readonly query?: z.AnyZodObject;
  readonly body?: z.ZodTypeAny;
  /** Also accepts multipart/form-data with these fields (files as further parts). */
  readonly multipart?: z.AnyZodObject;
  readonly responses: Readonly<Record<number, ResponseDoc>>;
}

export interface RouteContext {
  readonly memory: Memory;
  readonly keys: KeyStore | null;
}

export interface RouteInput<P, Q, B> {
  readonly c: Context;
  readonly memory: Memory;
  readonly scope: Scope;
  readonly params: P;
  readonly query: Q;
  readonly body: B;
  /** File parts of a multipart request, by part name (empty for JSON). */
  readonly files: ReadonlyMap<string, File>;
}

export interface Route extends RouteDoc {
  register(app: Hono, context: RouteContext): void;
}

/** Public routes get no scope: they must not touch tenant data. */
const noScope: Scope = Object.freeze({ tenant: "", user: "" });

/**
 * A route whose params, query and body are parsed by the same zod schemas that document it.
 * Order: scope (401/403) before the body is read, then params, query, body (400/415).
 */
export function defineRoute<
  P extends z.AnyZodObject = z.AnyZodObject,
  Q extends z.AnyZodObject = z.AnyZodObject,
  B extends z.ZodTypeAny = z.ZodUnknown,
>(
  doc: Omit<RouteDoc, "params" | "query" | "body"> & { params?: P; query?: Q; body?: B },
  handle: (input: RouteInput<z.infer<P>, z.infer<Q>, z.infer<B>>) => Promise<Response> | Response,
): Route {
  return {
    ...doc,
    register(app, context) {
      app.on(doc.method.toUpperCase(), doc.path, async (c) => {
        const scope =
          doc.scoped === "tenant"
            ? await resolveTenant(c.req.raw.headers, context.keys).then(({ tenant, user }) =>
                Object.freeze({ tenant, user: user ?? "" }),
              )
            : doc.scoped
              ? await resolveScope(c.req.raw.headers, context.keys)
              : noScope;
        const params = doc.params ? parseWith(doc.params, c.req.param(), "path") : {};
        const query = doc.query ? parseWith(doc.query, c.req.query(), "query") : {};
        const { body, files } = doc.body ? await readBody(c, doc) : { body: undefined, files: new Map() };
        return handle({ c, memory: context.memory, scope, params, query, body, files });
      });
    },
  };
}

async function readBody(c: Context, doc: RouteDoc): Promise<{ body: unknown; files: Map<string, File> }> {
  const type = (c.req.header("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  const schema = doc.body as z.ZodTypeAny;
  if (type === "application/json") {
    let value: unknown;
    try {
      value = await c.req.json();
    } catch (error) {
      if (error instanceof HttpError) throw error;
      throw new InputError("body", "not valid JSON", { cause: error });
    }
    return { body: parseWith(schema, value, "body"), files: new Map() };
  }
  if (type === "multipart/form-data" && doc.multipart) {
    let form: FormData;
    try {
      form = await c.req.formData();
    } catch (error) {
      if (error instanceof HttpError) throw error;
      throw new InputError("body", "not a readable multipart/form-data body", { cause: error });
    }
    const fields: Record<string, string> = {};
    const files = new Map<string, File>();
    for (const [name, value] of form.entries()) {
      if (typeof value === "string") fields[name] = value;
      else files.set(name, value);
    }
    parseWith(doc.multipart, fields, "form");
    const [field] = Object.keys(doc.multipart.shape);
    let value: unknown;
    try {
      value = JSON.parse(fields[field as string] as string);
    } catch (error) {
      throw new InputError(`form.${field}`, "not valid JSON", { cause: error });
    }
    return { body: parseWith(schema, value, `form.${field}`), files };
  }
  const accepted = doc.multipart ? "application/json or multipart/form-data" : "application/json";
  throw new HttpError("unsupported_media_type", `send ${accepted} (got ${type || "no content type"})`);
}
