import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { openKeyStore } from "../../src/auth/key-store.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { startServer } from "../../src/surfaces/http/server.ts";
import { tempDir } from "../support/fixtures.ts";
import { call, images, inspector, kayakSession } from "./support.ts";

function client(url: string, key?: string) {
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: key ? { headers: { Authorization: `Bearer ${key}` } } : {},
  });
  return { client: new Client({ name: "cairn-test", version: "1.0.0" }), transport };
}

describe("MCP through the real HTTP service at /mcp", () => {
  it("authenticates with an API key and scopes the tools to the key's user", async (t) => {
    const dir = tempDir(t);
    const memory = await Memory.open({ path: join(dir, "store"), models: createHashModels(), ownsModels: true });
    const keys = await openKeyStore(dir);
    const server = await startServer({ memory, keys, port: 0 });
    t.after(() => server.close());
    const ana = (await keys.create({ tenant: "acme", user: "ana" })).key;
    const ben = (await keys.create({ tenant: "acme", user: "ben" })).key;

    const anonymous = client(server.url);
    await assert.rejects(anonymous.client.connect(anonymous.transport), /401|auth|Unauthorized/i);

    const asAna = client(server.url, ana);
    await asAna.client.connect(asAna.transport);
    t.after(() => asAna.client.close());
    const { session, data } = await kayakSession();
    await call(asAna.client, "cairn_add_session", { session });
    const found = await call(asAna.client, "cairn_search", { text: "kayak", images: "original" });
    assert.equal(images(found.content)[0]?.data, data);
    // The mode passes through: with nothing compiled yet, a compiled search says it fell back.
    const compiled = await call(asAna.client, "cairn_search", { text: "kayak", mode: "compiled" });
    const trace = compiled.structuredContent as { mode: string; compiled?: { ran: boolean; reason: string } };
    assert.equal(trace.mode, "compiled");
    assert.deepEqual([trace.compiled?.ran, trace.compiled?.reason], [false, "the question bank is empty"]);

    const asBen = client(server.url, ben);
    await asBen.client.connect(asBen.transport);
    t.after(() => asBen.client.close());
    const nothing = await call(asBen.client, "cairn_search", { text: "kayak" });
    assert.deepEqual((nothing.structuredContent as { items: unknown[] }).items, []);

    // An outside client over HTTP: the MCP Inspector CLI with the key in a header.
    const listed = (await inspector(
      [`${server.url}/mcp`, "--transport", "http", "--header", `Authorization: Bearer ${ana}`],
      ["--method", "tools/call", "--tool-name", "cairn_list_sessions"],
    )) as { structuredContent: { sessions: { key: string }[] } };
    assert.deepEqual(
      listed.structuredContent.sessions.map((record) => record.key),
      ["s1"],
    );
  });
});
