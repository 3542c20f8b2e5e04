import { streamSSE } from "hono/streaming";
import { z } from "zod";
import { blobResponse } from "./blob-response.ts";
import { contextRoute } from "./context-route.ts";
import { whatCairnKnows } from "./knowledge.ts";
import { defineRoute, type Route, type RouteDoc } from "./route.ts";
import {
  appendTurnsBody,
  forgetBody,
  hashParam,
  idParam,
  multipartSessionBody,
  pageQuery,
  rememberBody,
  responses,
  searchBody,
  sessionBatchBody,
  sessionBody,
  videoAnswerBody,
  videoFactsQuery,
  videoMomentsQuery,
  videoNotificationsQuery,
  videoRuleBody,
  videoSearchQuery,
} from "./schemas.ts";
import { atBatchIndex, toSessionInput, toTurnInputs } from "./session-upload.ts";

/** Every route answers these before anything else (Host and Origin checks). */
const hostErrors = {
  403: {
    description: "Host or Origin not allowed (host_not_allowed, origin_not_allowed), or a key bound elsewhere",
    schema: responses.error,
  },
};
const errors = {
  400: { description: "invalid input", schema: responses.error },
  401: { description: "missing or unknown API key", schema: responses.error },
  403: {
    description:
      "the API key is bound to another tenant or user (forbidden), or the Host or Origin is not allowed (host_not_allowed, origin_not_allowed)",
    schema: responses.error,
  },
};
const notFound = { 404: { description: "no such id in this scope", schema: responses.error } };

/** The REST API under /v1: thin translations to the SDK, scoped by the request's key. */
export function apiRoutes(info: { version: string }): Route[] {
  return [
    defineRoute(
      {
        method: "get",
        operationId: "getHealth",
        path: "/v1/health",
        summary: "Liveness; needs no key",
        tag: "service",
        scoped: false,
        responses: { 200: { description: "the service is up", schema: responses.health }, ...hostErrors },
      },
      ({ c }) => c.json({ status: "ok", version: info.version, store: "sqlite" }),
    ),
    defineRoute(
      {
        method: "post",
        operationId: "addSession",
        path: "/v1/sessions",
        summary: "Add a session (JSON with base64 images, or multipart with file parts)",
        tag: "sessions",
        scoped: true,
        body: sessionBody,
        multipart: multipartSessionBody,
        responses: {
          201: { description: "stored", schema: responses.addSession },
          200: {
            description: "the identical session was already stored (duplicate: true)",
            schema: responses.addSession,
          },
          ...errors,
          409: { description: "the session id is taken by other content", schema: responses.error },
          413: { description: "body larger than the server's limit", schema: responses.error },
          415: { description: "not JSON or multipart/form-data", schema: responses.error },
        },
      },
      async ({ c, memory, scope, body, files }) => {
        const input = await toSessionInput(body, files, scope);
        const result = await memory.addSession(scope, input);
        return c.json(result, result.duplicate ? 200 : 201);
      },
    ),
    defineRoute(
      {
        method: "post",
        operationId: "addSessions",
        path: "/v1/sessions/batch",
        summary: "Add several sessions in one transaction (JSON with base64 images): all land or none does",
        tag: "sessions",
        scoped: true,
        body: sessionBatchBody,
        responses: {
          201: { description: "stored; results in the order given", schema: responses.addSessions },
          200: {
            description: "every session was already stored (each duplicate: true)",
            schema: responses.addSessions,
          },
          ...errors,
          409: { description: "a session id is taken by other content; nothing was written", schema: responses.error },
          413: { description: "body larger than the server's limit", schema: responses.error },
          415: { description: "not JSON", schema: responses.error },
        },
      },
      async ({ c, memory, scope, body }) => {
        const inputs = [];
        for (const [index, session] of body.sessions.entries()) {
          inputs.push(await atBatchIndex(index, () => toSessionInput(session, new Map(), scope)));
        }
        // One durable commit for the lot (`Memory.addSessions`): in-process at 100k raw nodes, 2,117 raw
        // nodes/s against 1,044 one session a call (BENCHMARKS.md, stop 35).
        const results = await memory.addSessions(scope, inputs);
        return c.json({ results }, results.every((result) => result.duplicate) ? 200 : 201);
      },
    ),
    defineRoute(
      {
        method: "get",
        operationId: "listSessions",
        path: "/v1/sessions",
        summary: "List sessions, newest first",
        tag: "sessions",
        scoped: true,
        query: pageQuery,
        responses: { 200: { description: "a page of sessions", schema: responses.sessions }, ...errors },
      },
      async ({ c, memory, scope, query }) => c.json({ sessions: await memory.listSessions(scope, query) }),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "getSession",
        path: "/v1/sessions/:id",
        summary: "A session and its raw nodes",
        tag: "sessions",
        scoped: true,
        params: idParam,
        responses: { 200: { description: "the session", schema: responses.session }, ...errors, ...notFound },
      },
      async ({ c, memory, scope, params }) => {
        const session = await memory.getSession(scope, params.id);
        return c.json({ session, rawNodes: await memory.listRawNodes(scope, session.id) });
      },
    ),
    defineRoute(
      {
        method: "post",
        operationId: "appendTurns",
        path: "/v1/sessions/:id/turns",
        summary: "Append turns to a session (by its key), making it when it is not stored yet",
        tag: "sessions",
        scoped: true,
        params: idParam,
        body: appendTurnsBody,
        responses: {
          201: { description: "appended", schema: responses.addSession },
          200: { description: "the same part was already appended (duplicate: true)", schema: responses.addSession },
          ...errors,
          413: { description: "body larger than the server's limit", schema: responses.error },
        },
      },
      async ({ c, memory, scope, params, body }) => {
        const { partKey, turns, ...rest } = body;
        const input = { ...rest, turns: await toTurnInputs(turns, new Map()) };
        const result = await memory.appendTurns(scope, params.id, input, partKey === undefined ? {} : { partKey });
        return c.json(result, result.duplicate ? 200 : 201);
      },
    ),
    defineRoute(
      {
        method: "post",
        operationId: "remember",
        path: "/v1/remember",
        summary: "Remember one note (text, images or both) at the current time, as its own session",
        tag: "sessions",
        scoped: true,
        body: rememberBody,
        responses: {
          201: { description: "remembered", schema: responses.remember },
          ...errors,
          413: { description: "body larger than the server's limit", schema: responses.error },
        },
      },
      async ({ c, memory, scope, body }) => {
        const { text, images, ...rest } = body;
        const [turn] = await toTurnInputs([{ images }], new Map());
        const result = await memory.remember(scope, text ?? "", {
          ...rest,
          images: turn?.images ?? [],
          source: "http:remember",
        });
        return c.json(result, 201);
      },
    ),
    defineRoute(
      {
        method: "post",
        operationId: "search",
        path: "/v1/search",
        summary: "Search through the active index and the direct channels, answered with a budgeted evidence pack",
        tag: "search",
        scoped: true,
        body: searchBody,
        responses: {
          200: { description: "the evidence pack", schema: responses.evidencePack },
          ...errors,
          413: { description: "body larger than the server's limit", schema: responses.error },
          415: { description: "not JSON", schema: responses.error },
        },
      },
      async ({ c, memory, scope, body }) => {
        const { text, image, ...options } = body;
        return c.json(await memory.search(scope, { text, image }, options));
      },
    ),
    contextRoute(errors),
    defineRoute(
      {
        method: "get",
        operationId: "getRawNode",
        path: "/v1/raw-nodes/:id",
        summary: "One raw node: original text, image references, provenance",
        tag: "evidence",
        scoped: true,
        params: idParam,
        responses: { 200: { description: "the raw node", schema: responses.rawNode }, ...errors, ...notFound },
      },
      async ({ c, memory, scope, params }) => c.json(await memory.getRawNode(scope, params.id)),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "getBlob",
        path: "/v1/blobs/:hash",
        summary: "The original image bytes (immutable: ETag is the SHA-256)",
        tag: "evidence",
        scoped: true,
        params: hashParam,
        responses: {
          200: { description: "the image", contentType: "image/*" },
          304: { description: "not modified (If-None-Match matched)" },
          ...errors,
          ...notFound,
        },
      },
      async ({ c, memory, scope, params }) => blobResponse(c, await memory.getBlob(scope, params.hash), params.hash),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "getThumbnail",
        path: "/v1/blobs/:hash/thumbnail",
        summary: "A 256 px WebP thumbnail of the image",
        tag: "evidence",
        scoped: true,
        params: hashParam,
        responses: {
          200: { description: "the thumbnail", contentType: "image/webp" },
          304: { description: "not modified (If-None-Match matched)" },
          ...errors,
          ...notFound,
        },
      },
      async ({ c, memory, scope, params }) =>
        blobResponse(c, await memory.getBlob(scope, params.hash, { thumbnail: true }), `${params.hash}.thumbnail`),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "listVideoEntities",
        path: "/v1/video/entities",
        summary: "Entities seen in watched video (or enrolled), with their sightings",
        tag: "video",
        scoped: true,
        responses: { 200: { description: "the entities", schema: responses.videoEntities }, ...errors },
      },
      async ({ c, memory, scope }) => c.json({ entities: await memory.listEntities(scope) }),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "searchVideo",
        path: "/v1/video/search",
        summary: "Search one episodic level of the video memory (observation, trace or chapter)",
        tag: "video",
        scoped: true,
        query: videoSearchQuery,
        responses: { 200: { description: "hits, best first", schema: responses.videoHits }, ...errors },
      },
      async ({ c, memory, scope, query }) =>
        c.json({
          hits: await memory.searchVideo(scope, query.q, {
            level: query.level,
            limit: query.limit,
            stream: query.stream,
            entityId: query.entity,
          }),
        }),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "getVideoItem",
        path: "/v1/video/items/:id",
        summary: "A video item with its time-ordered neighbours",
        tag: "video",
        scoped: true,
        params: idParam,
        responses: { 200: { description: "the item", schema: responses.videoItem }, ...errors, ...notFound },
      },
      async ({ c, memory, scope, params }) => c.json(await memory.getVideoItem(scope, params.id)),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "getVideoFrames",
        path: "/v1/video/items/:id/frames",
        summary: "The key frames and crops behind a video item (pixels at /v1/blobs/{hash})",
        tag: "video",
        scoped: true,
        params: idParam,
        responses: { 200: { description: "the frames", schema: responses.videoFrames }, ...errors, ...notFound },
      },
      async ({ c, memory, scope, params }) => c.json({ frames: await memory.videoKeyFrames(scope, params.id) }),
    ),
    defineRoute(
      {
        method: "post",
        operationId: "answerFromVideo",
        path: "/v1/video/answer",
        summary: "Answer a question from the video memory with the chat model, citing the items used",
        tag: "video",
        scoped: true,
        body: videoAnswerBody,
        responses: { 200: { description: "the answer", schema: responses.videoAnswer }, ...errors },
      },
      async ({ c, memory, scope, body }) =>
        c.json(await memory.answerFromVideo(scope, body.question, body.levels ? { levels: body.levels } : {})),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "listVideoMoments",
        path: "/v1/video/moments",
        summary: "Per-segment moments (traces), newest first, with their key frames and timestamps",
        tag: "video",
        scoped: true,
        query: videoMomentsQuery,
        responses: { 200: { description: "the moments", schema: responses.videoMoments }, ...errors },
      },
      async ({ c, memory, scope, query }) =>
        c.json({
          moments: await memory.listVideoMoments(scope, {
            ...(query.stream ? { stream: query.stream } : {}),
            ...(query.limit ? { limit: query.limit } : {}),
          }),
        }),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "listVideoFacts",
        path: "/v1/video/facts",
        summary:
          "Semantic memory: facts about entities and sources' scenes, most important first, with the raw nodes behind each",
        tag: "video",
        scoped: true,
        query: videoFactsQuery,
        responses: { 200: { description: "the facts", schema: responses.videoFacts }, ...errors },
      },
      async ({ c, memory, scope, query }) =>
        c.json({
          facts: await memory.listFacts(scope, {
            ...(query.entity ? { entityId: query.entity } : {}),
            ...(query.source ? { source: query.source } : {}),
          }),
        }),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "listVideoSources",
        path: "/v1/video/sources",
        summary: "The source view: watched sources with their streams, segment counts and live status",
        tag: "video",
        scoped: true,
        responses: { 200: { description: "the sources", schema: responses.videoSources }, ...errors },
      },
      async ({ c, memory, scope }) => c.json({ sources: await memory.listVideoSources(scope) }),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "getVideoEntityMemory",
        path: "/v1/video/entities/:id/memory",
        summary: "One entity's evolving facts (importance, edit history), sightings and recent observations",
        tag: "video",
        scoped: true,
        params: idParam,
        responses: { 200: { description: "the panel", schema: responses.entityMemory }, ...errors, ...notFound },
      },
      async ({ c, memory, scope, params }) => c.json(await memory.entityMemory(scope, params.id)),
    ),
    defineRoute(
      {
        method: "post",
        operationId: "addVideoRule",
        path: "/v1/video/rules",
        summary: "State a rule or preference for this user's streams (audited)",
        tag: "video",
        scoped: true,
        body: videoRuleBody,
        responses: { 201: { description: "the stored rule", schema: responses.videoRule }, ...errors },
      },
      async ({ c, memory, scope, body }) => c.json({ rule: await memory.addVideoRule(scope, body) }, 201),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "listVideoRules",
        path: "/v1/video/rules",
        summary: "The rules and preferences of this user",
        tag: "video",
        scoped: true,
        responses: { 200: { description: "the rules", schema: responses.videoRules }, ...errors },
      },
      async ({ c, memory, scope }) => c.json({ rules: await memory.listVideoRules(scope) }),
    ),
    defineRoute(
      {
        method: "delete",
        operationId: "removeVideoRule",
        path: "/v1/video/rules/:id",
        summary: "Remove a rule (audited); its notifications stay in the log",
        tag: "video",
        scoped: true,
        params: idParam,
        responses: { 200: { description: "removed", schema: responses.videoRuleRemoved }, ...errors, ...notFound },
      },
      async ({ c, memory, scope, params }) => {
        await memory.removeVideoRule(scope, params.id);
        return c.json({ removed: params.id });
      },
    ),
    defineRoute(
      {
        method: "get",
        operationId: "listVideoNotifications",
        path: "/v1/video/notifications",
        summary: "The notification log: every decision of the notifier, newest first",
        tag: "video",
        scoped: true,
        query: videoNotificationsQuery,
        responses: { 200: { description: "the log", schema: responses.videoNotifications }, ...errors },
      },
      async ({ c, memory, scope, query }) =>
        c.json({
          notifications: await memory.listVideoNotifications(scope, {
            ...(query.stream ? { stream: query.stream } : {}),
            ...(query.rule ? { ruleId: query.rule } : {}),
            ...(query.outcome ? { outcome: query.outcome } : {}),
            ...(query.limit ? { limit: query.limit } : {}),
          }),
        }),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "streamVideoNotifications",
        path: "/v1/video/notifications/stream",
        summary: "Deliveries as they are sent, as server-sent events (event: notification)",
        tag: "video",
        scoped: true,
        responses: {
          200: {
            description: "an event stream; one `notification` event per delivery",
            contentType: "text/event-stream",
          },
          ...errors,
        },
      },
      ({ c, memory, scope }) =>
        streamSSE(c, async (stream) => {
          const queue: string[] = [];
          let wake: (() => void) | null = null;
          const unsubscribe = memory.subscribeVideoNotifications(scope, (notification) => {
            queue.push(JSON.stringify(notification));
            wake?.();
          });
          stream.onAbort(() => {
            unsubscribe();
            wake?.();
          });
          await stream.writeSSE({ event: "ready", data: "{}" });
          while (!stream.aborted) {
            const next = queue.shift();
            if (next !== undefined) {
              await stream.writeSSE({ event: "notification", data: next });
              continue;
            }
            await new Promise<void>((resolve) => {
              wake = resolve;
              setTimeout(resolve, 15_000).unref();
            });
            wake = null;
            if (queue.length === 0 && !stream.aborted) await stream.writeSSE({ event: "ping", data: "{}" });
          }
          unsubscribe();
        }),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "listEntries",
        path: "/v1/entries",
        summary: "List entries (fields grow over time: render unknown ones generically)",
        tag: "entries",
        scoped: true,
        query: pageQuery,
        responses: { 200: { description: "a page of entries", schema: responses.entries }, ...errors },
      },
      async ({ c, memory, scope, query }) => c.json({ entries: await memory.listEntries(scope, query) }),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "getKnowledge",
        path: "/v1/knowledge",
        summary:
          "What Cairn knows about this user: active memories in the words that were said, with their sources and what they replaced",
        tag: "entries",
        scoped: true,
        query: pageQuery,
        responses: { 200: { description: "a page of memories, newest first", schema: responses.knowledge }, ...errors },
      },
      async ({ c, memory, scope, query }) =>
        c.json(await whatCairnKnows(memory, scope, { limit: query.limit ?? 20, offset: query.offset ?? 0 })),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "listUsers",
        path: "/v1/users",
        summary:
          "The tenant's users holding memory: all of them for a tenant-wide API key (one bound to no user), the key's own user otherwise",
        tag: "service",
        scoped: "tenant",
        responses: { 200: { description: "the tenant's users", schema: responses.users }, ...errors },
      },
      async ({ c, memory, scope }) => {
        // A key bound to a user sees that user alone: the tenant's other users are not its business.
        const tenantWide = scope.user === "";
        const scopes = (await memory.listScopes({ tenant: scope.tenant })).filter(
          (found) => tenantWide || found.user === scope.user,
        );
        return c.json({
          tenantWide,
          users: scopes.map((found) => ({ user: found.user, agent: found.agent ?? null })),
        });
      },
    ),
    defineRoute(
      {
        method: "get",
        operationId: "getBank",
        path: "/v1/bank",
        summary: "The question bank (PMMC): banked programs with their DAG, verification and evidence; retirements",
        tag: "service",
        scoped: true,
        query: pageQuery,
        responses: { 200: { description: "a page of the bank", schema: responses.bank }, ...errors },
      },
      async ({ c, memory, scope, query }) => c.json(await memory.bankView(scope, query)),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "listAudit",
        path: "/v1/audit",
        summary: "The audit trail of this scope (writes and forgets)",
        tag: "service",
        scoped: true,
        query: pageQuery,
        responses: { 200: { description: "a page of audit events", schema: responses.audit }, ...errors },
      },
      async ({ c, memory, scope, query }) => c.json({ events: await memory.listAudit(scope, query) }),
    ),
    defineRoute(
      {
        method: "get",
        operationId: "getStats",
        path: "/v1/stats",
        summary: "Counts of what this scope holds",
        tag: "service",
        scoped: true,
        responses: { 200: { description: "the counts", schema: responses.stats }, ...errors },
      },
      async ({ c, memory, scope }) => c.json(await memory.stats(scope)),
    ),
    defineRoute(
      {
        method: "post",
        operationId: "forget",
        path: "/v1/forget",
        summary: "Delete a session, a raw node or everything of this scope, with all that derives from it",
        tag: "sessions",
        scoped: true,
        body: forgetBody,
        responses: {
          200: { description: "what was deleted; audited", schema: responses.forget },
          ...errors,
          ...notFound,
          415: { description: "not JSON", schema: responses.error },
        },
      },
      async ({ c, memory, scope, body }) => c.json(await memory.forget(scope, body)),
    ),
  ];
}

/** `/openapi.json` as a route of its own document (the app serves it). */
export const openApiRouteDoc: RouteDoc = {
  method: "get",
  operationId: "getOpenApiDocument",
  path: "/openapi.json",
  summary: "This OpenAPI 3.1 document; needs no key",
  tag: "service",
  scoped: false,
  responses: {
    200: { description: "the document", schema: z.record(z.string(), z.unknown()) },
    ...hostErrors,
  },
};

const statelessMcp = {
  description:
    "Method not allowed: /mcp is stateless (no session to resume with GET or to end with DELETE); clients then use POST alone",
  headers: { Allow: "POST" },
  schema: responses.jsonRpcResponse,
};

/** Documented for the OpenAPI document as the endpoint really answers; the app mounts the MCP handler itself. */
export const mcpRouteDocs: RouteDoc[] = [
  {
    method: "post",
    operationId: "mcpPost",
    path: "/mcp",
    summary:
      "MCP over streamable HTTP (stateless, JSON answers), authenticated and scoped like the REST API. Send " +
      "Accept: application/json, text/event-stream",
    tag: "mcp",
    scoped: true,
    body: responses.jsonRpcRequest,
    responses: {
      200: { description: "the JSON-RPC answer to a request", schema: responses.jsonRpcResponse },
      202: { description: "a notification or response was accepted; no body" },
      400: { description: "not a valid JSON-RPC message (a JSON-RPC error)", schema: responses.jsonRpcResponse },
      401: errors[401],
      403: errors[403],
      406: {
        description: "the Accept header lacks application/json and text/event-stream",
        schema: responses.jsonRpcResponse,
      },
      413: { description: "body larger than the server's limit", schema: responses.error },
      415: { description: "not application/json (a JSON-RPC error)", schema: responses.jsonRpcResponse },
      501: {
        description: "the server was installed without the optional MCP SDK (@modelcontextprotocol/sdk)",
        schema: responses.error,
      },
    },
  },
  {
    method: "get",
    operationId: "mcpGet",
    path: "/mcp",
    summary: "Not served: a stateless endpoint has no stream to open or resume",
    tag: "mcp",
    scoped: true,
    responses: { 405: statelessMcp, 401: errors[401], 403: errors[403] },
  },
  {
    method: "delete",
    operationId: "mcpDelete",
    path: "/mcp",
    summary: "Not served: a stateless endpoint has no session to end",
    tag: "mcp",
    scoped: true,
    responses: { 405: statelessMcp, 401: errors[401], 403: errors[403] },
  },
];
