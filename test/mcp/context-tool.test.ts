import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { createMcpServer } from "../../src/surfaces/mcp/server.ts";
import { tempDir } from "../support/fixtures.ts";
import { call, callFailing } from "./support.ts";

describe("cairn_manage_context", () => {
  it("returns a bounded working context and stores what it dropped where cairn_search finds it", async (t) => {
    const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels(), ownsModels: true });
    const server = createMcpServer(memory, { tenant: "acme", user: "ana" });
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "cairn-test", version: "1.0.0" });
    await client.connect(clientSide);
    t.after(async () => {
      await client.close();
      await memory.close();
    });
    const messages = Array.from({ length: 40 }, (_, n) => ({
      role: n % 2 ? "assistant" : "user",
      content: `Note ${n}: ${"the lighthouse keeper logged ships, storms and supplies ".repeat(30)}`,
    }));
    const result = await call(client, "cairn_manage_context", {
      messages,
      manager: "summarisation",
      window: 6_000,
      keepRecent: 2,
    });
    const context = result.structuredContent as {
      managed: boolean;
      cost: { total: number };
      messages: { content: string }[];
      evicted: { written: number };
    };
    assert.equal(context.managed, true);
    assert.ok(context.cost.total <= 6_000);
    assert.equal(context.messages.at(-1)?.content.startsWith("Note 39"), true);
    assert.ok(context.evicted.written > 0);
    const found = await call(client, "cairn_search", { text: "Note 0 lighthouse keeper" });
    assert.match(JSON.stringify(found.structuredContent), /Note 0/);
    const bad = await callFailing(client, "cairn_manage_context", { messages: [{ role: "tool", content: "x" }] });
    assert.match(JSON.stringify(bad), /toolCallId/);
  });
});
