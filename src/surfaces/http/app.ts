import { readFileSync } from "node:fs";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import type { KeyStore } from "../../auth/key-store.ts";
import { ConfigError } from "../../core/errors.ts";
import type { Memory } from "../../memory.ts";
import { dashboardRoutes } from "../dashboard/routes.ts";
import { loadMcpModule } from "../mcp/load-sdk.ts";
import type { McpServerOptions } from "../mcp/server.ts";
import { apiRoutes, mcpRouteDocs, openApiRouteDoc } from "./api-routes.ts";
import { errorResponse, HttpError } from "./errors.ts";
import { buildOpenApi } from "./openapi.ts";
import { type OriginPolicyOptions, originPolicy } from "./origin-policy.ts";
import { agentHeader, resolveScope, tenantHeader, userHeader } from "./request-scope.ts";

/** Large enough for a 20 MiB image (the default image limit) sent as base64 in JSON. */
export const defaultMaxBodyBytes = 32 * 1024 * 1024;

export type HttpLogEvent = { readonly type: "unexpected"; readonly error: unknown };

export interface AppOptions {
  readonly memory: Memory;
  /** null = --no-auth: the scope comes from X-Cairn-Tenant / X-Cairn-User headers. */
  readonly keys: KeyStore | null;
  /** Requests with a larger body answer 413 before the SDK sees them. Default 32 MiB. */
  readonly maxBodyBytes?: number;
  readonly log?: (event: HttpLogEvent) => void;
  /** Host and Origin checks and CORS; default: loopback names only, no CORS. */
  readonly origins?: OriginPolicyOptions;
  /** The port the socket listens on, once it does: loopback Host names must carry it. */
  readonly boundPort?: () => number | undefined;
  /** What `/mcp`'s tools may do beyond the store (cairn_remember's image folder and URLs); nothing by default. */
  readonly mcp?: McpServerOptions;
}

const version = (
  JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string }
).version;

/**
 * The HTTP surface: REST under /v1, its OpenAPI document, MCP at /mcp and the dashboard at /.
 *
 * @example
 * const app = createApp({ memory, keys: await KeyStore.open({ path: ".cairn" }) });
 * const response = await app.request("/v1/health");
 */
export function createApp(options: AppOptions): Hono {
  const { memory, keys } = options;
  const maxBodyBytes = options.maxBodyBytes ?? defaultMaxBodyBytes;
  const log = options.log ?? (() => {});
  const routes = apiRoutes({ version });
  const openApi = buildOpenApi([...routes, openApiRouteDoc, ...mcpRouteDocs], { version });
  const policy = originPolicy(options.origins ?? {}, options.boundPort ?? (() => undefined));

  const app = new Hono();
  app.onError((error, c) => {
    const { status, body } = errorResponse(error, (unexpected) => log({ type: "unexpected", error: unexpected }));
    return c.json(body, status);
  });
  app.notFound((c) => {
    const { status, body } = errorResponse(new HttpError("no_route", `no route ${c.req.method} ${c.req.path}`));
    return c.json(body, status);
  });
  // First, before authentication and before any route: a rebinding page is refused even with a valid key in hand.
  app.use("*", async (c, next) => {
    policy.check(c.req.raw.headers, c.req.url);
    await next();
  });
  if (policy.corsOrigins.length > 0) {
    app.use(
      "*",
      cors({
        origin: (origin) => (policy.corsAllows(origin) ? origin : null),
        allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],
        allowHeaders: [
          "Authorization",
          "Content-Type",
          userHeader,
          tenantHeader,
          agentHeader,
          "Mcp-Session-Id",
          "Mcp-Protocol-Version",
          "Last-Event-ID",
        ],
        exposeHeaders: ["Mcp-Session-Id", "Mcp-Protocol-Version"],
        maxAge: 600,
      }),
    );
  }
  app.use(
    "*",
    bodyLimit({
      maxSize: maxBodyBytes,
      onError: () => {
        throw new HttpError("too_large", `the request body is larger than the server's limit of ${maxBodyBytes} bytes`);
      },
    }),
  );

  for (const route of routes) route.register(app, { memory, keys });
  // `servers` names the origin the document was fetched from (its Host passed the check above), so a
  // client generated from the live document calls the server it came from.
  app.get("/openapi.json", (c) =>
    c.json({ ...openApi, servers: [{ url: new URL(c.req.url).origin, description: "this Cairn server" }] }),
  );
  app.on(["GET", "POST", "DELETE"], "/mcp", async (c) => {
    const scope = await resolveScope(c.req.raw.headers, keys);
    const { handleMcpHttp } = await loadMcpHttp();
    return handleMcpHttp(c.req.raw, memory, scope, options.mcp);
  });
  app.route("/", dashboardRoutes());
  return app;
}

/**
 * The `/mcp` handler, imported on the first MCP request: the SDK is an optional peer dependency, and
 * without it the endpoint answers 501 naming the install while the REST API serves as usual.
 */
async function loadMcpHttp(): Promise<typeof import("../mcp/http.ts")> {
  try {
    return await loadMcpModule(() => import("../mcp/http.ts"));
  } catch (error) {
    if (error instanceof ConfigError) throw new HttpError("not_installed", error.message);
    throw error;
  }
}
