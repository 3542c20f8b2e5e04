import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { ScopedStore, Store } from "../../src/store/store.ts";
import { createMcpServer, type McpLogEvent } from "../../src/surfaces/mcp/server.ts";
import { tempDir } from "../support/fixtures.ts";
import { callFailing } from "./support.ts";

describe("MCP tool failures that are not Cairn's typed errors", () => {
  it("answer a tool error without internals and hand the error to the injected log", async (t) => {
    const real = await SqliteStore.open({ path: join(tempDir(t), "store") });
    // A store whose raw-node read breaks the way a bug would: a plain Error, not a CairnError.
    const store = new Proxy(real, {
      get(target, property, receiver) {
        if (property !== "forScope") {
          const value = Reflect.get(target, property, receiver);
          return typeof value === "function" ? value.bind(target) : value;
        }
        return (scope: Parameters<Store["forScope"]>[0]): ScopedStore => {
          const scoped = target.forScope(scope);
          return new Proxy(scoped, {
            get(inner, name, innerReceiver) {
              if (name === "readRawNodes") return () => Promise.reject(new Error("secret internal detail"));
              const value = Reflect.get(inner, name, innerReceiver);
              return typeof value === "function" ? value.bind(inner) : value;
            },
          });
        };
      },
    });
    const memory = await Memory.open({ store, models: createHashModels(), ownsModels: true });
    t.after(() => memory.close());
    const events: McpLogEvent[] = [];
    const server = createMcpServer(memory, { tenant: "acme", user: "ana" }, { log: (event) => events.push(event) });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "cairn-test", version: "1.0.0" });
    await client.connect(clientSide);
    t.after(() => client.close());

    const failed = await callFailing(client, "cairn_get_raw_node", { id: "rn_1" });
    assert.equal(failed.error.code, "unexpected");
    assert.doesNotMatch(failed.text, /secret internal detail/);
    assert.equal(events.length, 1);
    assert.equal(events[0]?.tool, "cairn_get_raw_node");
    assert.match(String(events[0]?.error), /secret internal detail/);
  });
});
