import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { CairnError } from "../../../src/errors.ts";
import type { Memory } from "../../../src/memory.ts";
import type { Scope } from "../../../src/scope.ts";
import { dashboardRoutes } from "../../../src/surfaces/dashboard/routes.ts";

/**
 * A stand-in for the real HTTP server while it is being written: the dashboard plus the few /v1
 * routes it calls, over the real SDK, in --no-auth style (scope from X-Cairn-Tenant / X-Cairn-User).
 */
export async function startInterimServer(memory: Memory): Promise<{ url: string; close(): Promise<void> }> {
  const app = new Hono();
  const scopeOf = (headers: Headers): Scope => ({
    tenant: headers.get("x-cairn-tenant") || "default",
    user: headers.get("x-cairn-user") || "default",
  });
  const page = (query: Record<string, string>) => ({
    limit: query.limit ? Number(query.limit) : undefined,
    offset: query.offset ? Number(query.offset) : undefined,
  });
  app.onError((error, c) => {
    const status = CairnError.is(error)
      ? ({ input: 400, not_found: 404, conflict: 409 } as const)[error.code as "input"]
      : 500;
    return c.json(
      { error: { code: CairnError.is(error) ? error.code : "internal", message: error.message } },
      status ?? 500,
    );
  });
  app.get("/v1/health", (c) => c.json({ status: "ok", version: "interim", store: "sqlite" }));
  app.get("/v1/stats", async (c) => c.json(await memory.stats(scopeOf(c.req.raw.headers))));
  app.get("/v1/sessions", async (c) =>
    c.json({ sessions: await memory.listSessions(scopeOf(c.req.raw.headers), page(c.req.query())) }),
  );
  app.post("/v1/sessions", async (c) => {
    const result = await memory.addSession(scopeOf(c.req.raw.headers), await c.req.json());
    return c.json(result, result.duplicate ? 200 : 201);
  });
  app.get("/v1/sessions/:id", async (c) => {
    const scope = scopeOf(c.req.raw.headers);
    const id = c.req.param("id");
    const session = (await memory.listSessions(scope, { limit: 10_000 })).find((candidate) => candidate.id === id);
    if (!session) return c.json({ error: { code: "not_found", message: `session ${id} not found` } }, 404);
    return c.json({ session, rawNodes: await memory.listRawNodes(scope, id) });
  });
  app.get("/v1/raw-nodes/:id", async (c) =>
    c.json(await memory.getRawNode(scopeOf(c.req.raw.headers), c.req.param("id"))),
  );
  app.get("/v1/entries", async (c) =>
    c.json({ entries: await memory.listEntries(scopeOf(c.req.raw.headers), page(c.req.query())) }),
  );
  app.get("/v1/audit", async (c) =>
    c.json({ events: await memory.listAudit(scopeOf(c.req.raw.headers), page(c.req.query())) }),
  );
  app.post("/v1/search", async (c) => {
    const { text, image, ...options } = await c.req.json();
    return c.json(await memory.search(scopeOf(c.req.raw.headers), { text, image }, options));
  });
  for (const [path, thumbnail] of [
    ["/v1/blobs/:hash", false],
    ["/v1/blobs/:hash/thumbnail", true],
  ] as const) {
    app.get(path, async (c) => {
      const blob = await memory.getBlob(scopeOf(c.req.raw.headers), c.req.param("hash"), { thumbnail });
      return c.body(new Uint8Array(blob.data), 200, { "Content-Type": blob.mediaType });
    });
  }
  app.route("/", dashboardRoutes());

  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const started = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(started));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}
