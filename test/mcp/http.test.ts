import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { getRequestListener } from "@hono/node-server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { handleMcpHttp } from "../../src/surfaces/mcp/http.ts";
import { tempDir } from "../support/fixtures.ts";
import { call, callFailing, images, kayakSession, links, texts, toolNames } from "./support.ts";

/**
 * `handleMcpHttp` behind a real socket, without the HTTP app: the scope comes from a test header
 * here (the app resolves it from the API key).
 */
async function serveMcp(t: TestContext) {
  const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels(), ownsModels: true });
  const server = createServer(
    getRequestListener((request) =>
      handleMcpHttp(request, memory, { tenant: "acme", user: request.headers.get("x-test-user") ?? "ana" }),
    ),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
  t.after(async () => {
    await new Promise((resolve) => server.close(resolve));
    await memory.close();
  });
  return url;
}

async function connect(url: URL, user: string) {
  const client = new Client({ name: "cairn-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { "X-Test-User": user } } }));
  return client;
}

describe("MCP over streamable HTTP (handleMcpHttp)", () => {
  it("serves the tools statelessly: add, search with the image back, read the blob, other users see nothing", async (t) => {
    const url = await serveMcp(t);
    const ana = await connect(url, "ana");
    t.after(() => ana.close());

    const { tools } = await ana.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), toolNames);
    const { session, data } = await kayakSession();
    const added = await call(ana, "cairn_add_session", { session });
    const { rawNodeIds } = added.structuredContent as { rawNodeIds: string[] };
    assert.equal(rawNodeIds.length, 2);

    const found = await call(ana, "cairn_search", { text: "kayak", images: "original" });
    assert.equal(images(found.content)[0]?.data, data);
    assert.match(texts(found.content), /session s1 .* turn 1/);
    const pack = found.structuredContent as { items: { rawNodeId: string; images: { hash: string }[] }[] };
    const hash = pack.items.flatMap((item) => item.images)[0]?.hash as string;
    const blob = await ana.readResource({ uri: `cairn://blobs/${hash}` });
    assert.deepEqual(blob.contents[0], { uri: `cairn://blobs/${hash}`, mimeType: "image/png", blob: data });

    // Same server, another user: the scope comes from the request, not from the tool arguments.
    const ben = await connect(url, "ben");
    t.after(() => ben.close());
    const nothing = await call(ben, "cairn_search", { text: "kayak" });
    assert.deepEqual((nothing.structuredContent as typeof pack).items, []);
    assert.equal(links(nothing.content).length, 0);
    const hidden = await callFailing(ben, "cairn_get_raw_node", { id: rawNodeIds[1] as string });
    assert.equal(hidden.error.code, "not_found");
    await assert.rejects(ben.readResource({ uri: `cairn://blobs/${hash}` }));
    const notYours = await callFailing(ben, "cairn_forget", { session: "s1" });
    assert.equal(notYours.error.code, "not_found");
    assert.equal(links((await call(ana, "cairn_search", { text: "kayak" })).content).length, 1);
  });

  it("answers other methods with 405 and malformed JSON with a JSON-RPC parse error", async (t) => {
    const url = await serveMcp(t);
    const get = await fetch(url, { headers: { Accept: "text/event-stream" } });
    assert.equal(get.status, 405);
    assert.equal(get.headers.get("allow"), "POST");
    const malformed = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: "{not json",
    });
    assert.equal(malformed.status, 400);
    assert.equal(((await malformed.json()) as { error: { code: number } }).error.code, -32700);
  });
});
