import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, it } from "node:test";
import { promisify } from "node:util";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { Ajv2020 } from "ajv/dist/2020.js";
import openapiTS, { astToString } from "openapi-typescript";
import { drawPng, tempDir } from "../support/fixtures.ts";
import { session, startTestServer, type TestServer } from "./support.ts";

const documentId = "https://cairn.invalid/openapi.json";
type Document = {
  servers: { url: string }[];
  components: { schemas: Record<string, object> };
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, Response200> }>>;
};
type Response200 = { content?: Record<string, { schema: object }>; headers?: Record<string, object> };

/** The fixture client's exports, as this test calls them (it is compiled in a folder of its own). */
type TypedClient = {
  cairnClient(
    baseUrl: string,
    apiKey: string,
  ): { addSession(session: unknown): Promise<{ sessionKey: string }>; search(request: unknown): Promise<unknown> };
  summarise(pack: unknown): string[];
};

async function liveDocument(server: TestServer): Promise<Document> {
  return (await (await server.request("/openapi.json")).json()) as Document;
}

/** Validates live answers against the response schema the document gives for that operation and status. */
function validator(document: Document) {
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addSchema({ $id: documentId, components: document.components });
  return (path: string, method: string, status: number, body: unknown) => {
    const schema = document.paths[path]?.[method]?.responses[String(status)]?.content?.["application/json"]?.schema;
    assert.ok(schema, `the document has a JSON schema for ${method} ${path} ${status}`);
    const validate = ajv.compile(
      JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${documentId}#/components/`)),
    );
    assert.ok(validate(body), `${method} ${path} ${status}: ${JSON.stringify(validate.errors?.slice(0, 3))}`);
  };
}

describe("the OpenAPI document as a client sees it", () => {
  it("names its schemas, has stable operation ids and servers, and passes Redocly's recommended rules", async (t) => {
    const server = await startTestServer(t);
    const document = await liveDocument(server);
    for (const name of ["EvidencePack", "EvidenceItem", "Provenance", "Budget", "BudgetUse", "RouteTrace", "Error"]) {
      assert.ok(document.components.schemas[name], `component ${name}`);
    }
    const operationIds = Object.values(document.paths).flatMap((item) =>
      Object.values(item).map((op) => op.operationId),
    );
    assert.deepEqual(operationIds.sort(), [
      "addSession",
      "addSessions",
      "addVideoRule",
      "answerFromVideo",
      "appendTurns",
      "forget",
      "getBank",
      "getBlob",
      "getHealth",
      "getKnowledge",
      "getOpenApiDocument",
      "getRawNode",
      "getSession",
      "getStats",
      "getThumbnail",
      "getVideoEntityMemory",
      "getVideoFrames",
      "getVideoItem",
      "listAudit",
      "listEntries",
      "listSessions",
      "listUsers",
      "listVideoEntities",
      "listVideoFacts",
      "listVideoMoments",
      "listVideoNotifications",
      "listVideoRules",
      "listVideoSources",
      "manageContext",
      "mcpDelete",
      "mcpGet",
      "mcpPost",
      "remember",
      "removeVideoRule",
      "search",
      "searchVideo",
      "streamVideoNotifications",
    ]);
    assert.deepEqual(
      document.servers.map((entry) => entry.url),
      [server.url],
    );
    const searchOk = document.paths["/v1/search"]?.post?.responses["200"]?.content?.["application/json"]?.schema;
    assert.deepEqual(searchOk, { $ref: "#/components/schemas/EvidencePack" });

    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: JSON.stringify(document), absoluteRef: documentId, config });
    const reported = problems.map((problem) => `${problem.ruleId} ${problem.location[0]?.pointer}`);
    // GET and DELETE /mcp answer only 405 (stateless endpoint): documented as they answer, which the
    // rule that wants a 2xx on every operation flags. Nothing else may be reported.
    assert.deepEqual(reported.sort(), [
      "operation-2xx-response #/paths/~1mcp/delete/responses",
      "operation-2xx-response #/paths/~1mcp/get/responses",
    ]);
  });

  it("describes what the server really answers: sessions, evidence packs, errors and /mcp", async (t) => {
    const server = await startTestServer(t);
    const key = (await server.keyStore().create({ tenant: "acme", user: "ana" })).key;
    const check = validator(await liveDocument(server));
    const png = await drawPng({ shape: "square", color: "#f80", background: "#39f" });
    const turns = [
      { speaker: "Ana", text: "We rented a kayak on Lake Bled." },
      { speaker: "Ana", text: "Look!", images: [{ data: png.toString("base64"), caption: "orange kayak" }] },
    ];
    const added = await server.request("/v1/sessions", { key, json: session("s1", turns) });
    const stored = await added.json();
    check("/v1/sessions", "post", 201, stored);
    check(
      "/v1/sessions",
      "post",
      200,
      await (await server.request("/v1/sessions", { key, json: session("s1", turns) })).json(),
    );
    check("/v1/sessions", "get", 200, await (await server.request("/v1/sessions", { key })).json());
    check(
      "/v1/sessions/{id}",
      "get",
      200,
      await (await server.request(`/v1/sessions/${stored.sessionId}`, { key })).json(),
    );
    check(
      "/v1/raw-nodes/{id}",
      "get",
      200,
      await (await server.request(`/v1/raw-nodes/${stored.rawNodeIds[1]}`, { key })).json(),
    );
    for (const mode of ["cairn", "route", "tri-path", "compiled"]) {
      const pack = await (await server.request("/v1/search", { key, json: { text: "kayak", mode } })).json();
      assert.ok(pack.items.length > 0);
      check("/v1/search", "post", 200, pack);
    }
    const byImage = await (
      await server.request("/v1/search", { key, json: { image: { data: png.toString("base64") }, vision: false } })
    ).json();
    check("/v1/search", "post", 200, byImage);
    check("/v1/stats", "get", 200, await (await server.request("/v1/stats", { key })).json());
    check("/v1/audit", "get", 200, await (await server.request("/v1/audit", { key })).json());
    check("/v1/entries", "get", 200, await (await server.request("/v1/entries", { key })).json());
    const knowledge = await (await server.request("/v1/knowledge", { key })).json();
    assert.ok(knowledge.memories.length > 0);
    check("/v1/knowledge", "get", 200, knowledge);
    check("/v1/health", "get", 200, await (await server.request("/v1/health")).json());

    const bad = await server.request("/v1/search", { key, json: { text: "x", budget: { images: -1 } } });
    check("/v1/search", "post", 400, await bad.json());
    check("/v1/search", "post", 401, await (await server.request("/v1/search", { json: { text: "x" } })).json());
    const foreign = await server.request("/v1/search", {
      key,
      json: { text: "x" },
      headers: { origin: "https://evil.example" },
    });
    check("/v1/search", "post", 403, await foreign.json());
    check("/v1/raw-nodes/{id}", "get", 404, await (await server.request("/v1/raw-nodes/rn_missing", { key })).json());

    const get = await server.request("/mcp", { key, headers: { accept: "text/event-stream" } });
    assert.equal(get.status, 405);
    assert.equal(get.headers.get("allow"), "POST");
    check("/mcp", "get", 405, await get.json());
    const del = await server.request("/mcp", { key, method: "DELETE" });
    assert.equal(del.status, 405);
    check("/mcp", "delete", 405, await del.json());
    const ping = await server.request("/mcp", {
      key,
      json: { jsonrpc: "2.0", id: 1, method: "ping" },
      headers: { accept: "application/json, text/event-stream" },
    });
    check("/mcp", "post", 200, await ping.json());
    const notification = await server.request("/mcp", {
      key,
      json: { jsonrpc: "2.0", method: "notifications/initialized" },
      headers: { accept: "application/json, text/event-stream" },
    });
    assert.equal(notification.status, 202);
    const notAcceptable = await server.request("/mcp", { key, json: { jsonrpc: "2.0", id: 2, method: "ping" } });
    assert.equal(notAcceptable.status, 406);
    check("/mcp", "post", 406, await notAcceptable.json());

    const forgot = await server.request("/v1/forget", { key, json: { session: "s1" } });
    check("/v1/forget", "post", 200, await forgot.json());
  });

  it("generates TypeScript types that a strict client uses to add a session and search, with no unknown in the pack", async (t) => {
    const server = await startTestServer(t);
    const key = (await server.keyStore().create({ tenant: "acme", user: "ana" })).key;
    const dir = tempDir(t);
    const types = astToString(
      await openapiTS((await liveDocument(server)) as unknown as Parameters<typeof openapiTS>[0]),
    );
    writeFileSync(join(dir, "cairn-api.ts"), types);
    copyFileSync(join(import.meta.dirname, "fixtures/typed-client.ts.txt"), join(dir, "typed-client.ts"));

    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    const compile = await promisify(execFile)(
      process.execPath,
      [
        tsc,
        "--strict",
        "--noEmit",
        "--noUncheckedIndexedAccess",
        "--target",
        "ES2022",
        "--module",
        "NodeNext",
        "--moduleResolution",
        "NodeNext",
        "--allowImportingTsExtensions",
        "--lib",
        "ES2022,DOM",
        join(dir, "typed-client.ts"),
      ],
      { cwd: dir },
    ).catch((error: { stdout?: string; message: string }) => ({ stdout: error.stdout ?? error.message, failed: true }));
    assert.ok(!("failed" in compile), `the generated client does not type-check:\n${compile.stdout}`);

    // And it works: the same client against the live server.
    const client = (await import(join(dir, "typed-client.ts"))) as TypedClient;
    const api = client.cairnClient(server.url, key);
    const stored = await api.addSession(
      session("s1", [{ speaker: "Ana", text: "The vet appointment is on May 21st." }]),
    );
    assert.equal(stored.sessionKey, "s1");
    const pack = await api.search({ text: "vet appointment", budget: { rawNodes: 3 } });
    const lines = client.summarise(pack);
    assert.match(lines[0] ?? "", /^s1#0 at .* \| Ana \| The vet appointment is on May 21st\./);
    await assert.rejects(api.search({ text: "" }), (error: Error) => /400 input/.test(error.message));
  });
});
