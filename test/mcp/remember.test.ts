import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { createMcpServer, type McpServerOptions } from "../../src/surfaces/mcp/server.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";
import { call, callFailing } from "./support.ts";

const scope = { tenant: "acme", user: "ana" };

async function connect(
  t: TestContext,
  options: McpServerOptions = {},
  memoryOptions: { allowRemoteImages?: boolean; fetch?: typeof fetch } = {},
) {
  const dir = tempDir(t);
  const memory = await Memory.open({
    path: join(dir, "store"),
    models: createHashModels(),
    ownsModels: true,
    ...memoryOptions,
  });
  const server = createMcpServer(memory, scope, { now: () => new Date("2024-07-01T09:30:00.000Z"), ...options });
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "cairn-test", version: "1.0.0" });
  await client.connect(clientSide);
  t.after(async () => {
    await client.close();
    await memory.close();
  });
  return { client, memory, dir };
}

type Remembered = {
  sessionKey: string;
  rawNodeId: string;
  time: string;
  conversation: string | null;
  duplicate: boolean;
};

describe("cairn_remember", () => {
  it("stores plain text at the server's now, one session per call grouped by day, and search finds it", async (t) => {
    const { client, memory } = await connect(t);
    const first = (await call(client, "cairn_remember", { text: "Ana's bike has a 54 cm frame" }))
      .structuredContent as Remembered;
    assert.equal(first.time, "2024-07-01T09:30:00.000Z");
    assert.equal(first.sessionKey, "remember/day/2024-07-01/0001");
    assert.equal(first.conversation, null);
    const second = (await call(client, "cairn_remember", { text: "She rides to work on Tuesdays" }))
      .structuredContent as Remembered;
    assert.equal(second.sessionKey, "remember/day/2024-07-01/0002");
    const later = (
      await call(client, "cairn_remember", { text: "Moved to Ljubljana", time: "2024-07-03T08:00:00+02:00" })
    ).structuredContent as Remembered;
    assert.equal(later.sessionKey, "remember/day/2024-07-03/0001");

    const node = await memory.getRawNode(scope, first.rawNodeId);
    assert.equal(node.text, "Ana's bike has a 54 cm frame");
    assert.equal(node.speaker, "user");
    const pack = await memory.search(scope, "bike frame");
    assert.equal(pack.items[0]?.rawNodeId, first.rawNodeId);
  });

  it("groups by conversation id and keeps numbering past a forgotten memory", async (t) => {
    const { client, memory } = await connect(t);
    const keys: string[] = [];
    for (const text of ["one", "two", "three"]) {
      const result = await call(client, "cairn_remember", {
        text: `note ${text}`,
        conversation: "chat-42",
        speaker: "Ana",
      });
      keys.push((result.structuredContent as Remembered).sessionKey);
    }
    assert.deepEqual(keys, [
      "remember/chat-42/2024-07-01/0001",
      "remember/chat-42/2024-07-01/0002",
      "remember/chat-42/2024-07-01/0003",
    ]);
    await memory.forget(scope, { session: keys[1] as string });
    const next = (await call(client, "cairn_remember", { text: "note four", conversation: "chat-42" }))
      .structuredContent as Remembered;
    assert.ok(!keys.slice(0, 1).concat(keys.slice(2)).includes(next.sessionKey), "never overwrites a stored memory");
    const sessions = await memory.listSessions(scope);
    assert.equal(sessions.length, 3);
    assert.equal(new Set(sessions.map((record) => record.key)).size, 3);
  });

  it("stores an image sent as base64 with its caption", async (t) => {
    const { client, memory } = await connect(t);
    const png = await drawPng({ shape: "circle", color: "#c00", background: "#fff" });
    const result = (
      await call(client, "cairn_remember", {
        text: "my new helmet",
        image: { data: png.toString("base64"), caption: "a red helmet" },
      })
    ).structuredContent as Remembered;
    const node = await memory.getRawNode(scope, result.rawNodeId);
    assert.equal(node.images[0]?.caption, "a red helmet");
    assert.equal(node.images[0]?.width, 96);
  });

  it("reads an image path only inside the server's image folder", async (t) => {
    const png = await drawPng({ shape: "square", color: "#0a0", background: "#fff" });
    const none = await connect(t);
    const refused = await callFailing(none.client, "cairn_remember", { text: "x", image: { path: "a.png" } });
    assert.equal(refused.error.field, "image.path");

    const folder = join(tempDir(t), "images");
    mkdirSync(folder);
    writeFile(folder, "a.png", png);
    writeFile(join(folder, ".."), "outside.png", png);
    const { client, memory } = await connect(t, { imageFolder: folder });
    const stored = (await call(client, "cairn_remember", { text: "green square", image: { path: "a.png" } }))
      .structuredContent as Remembered;
    assert.equal((await memory.getRawNode(scope, stored.rawNodeId)).images.length, 1);
    const outside = await callFailing(client, "cairn_remember", { text: "x", image: { path: "../outside.png" } });
    assert.equal(outside.error.code, "input");
    assert.match(outside.error.message, /leaves the input folder/);
    const absolute = await callFailing(client, "cairn_remember", { text: "x", image: { path: join(folder, "a.png") } });
    assert.equal(absolute.error.field, "image.path");
    assert.equal((await memory.listSessions(scope)).length, 1, "refused memories change nothing");
  });

  it("fetches an image URL only when the server and the memory allow it", async (t) => {
    const png = await drawPng({ shape: "square", color: "#00f", background: "#fff" });
    const fetched: string[] = [];
    const fakeFetch = (async (url: string | URL) => {
      fetched.push(String(url));
      return new Response(new Uint8Array(png), { headers: { "content-type": "image/png" } });
    }) as typeof fetch;
    const closed = await connect(t, {}, { allowRemoteImages: true, fetch: fakeFetch });
    const refused = await callFailing(closed.client, "cairn_remember", {
      text: "x",
      image: { url: "https://img.example/a.png" },
    });
    assert.equal(refused.error.field, "image.url");
    assert.deepEqual(fetched, []);

    const { client, memory } = await connect(t, { imageUrls: true }, { allowRemoteImages: true, fetch: fakeFetch });
    const stored = (
      await call(client, "cairn_remember", { text: "blue square", image: { url: "https://img.example/a.png" } })
    ).structuredContent as Remembered;
    assert.deepEqual(fetched, ["https://img.example/a.png"]);
    assert.equal((await memory.getRawNode(scope, stored.rawNodeId)).images.length, 1);
  });

  it("refuses bad input with the field named and stores nothing", async (t) => {
    const { client, memory } = await connect(t);
    const cases: [Record<string, unknown>, string][] = [
      [{}, "text"],
      [{ text: "   " }, "text"],
      [{ text: "x", time: "yesterday" }, "time"],
      [{ text: "x", conversation: "a/b" }, "conversation"],
      [{ text: "x", image: { data: "AAAA", url: "https://img.example/a.png" } }, "image"],
      [{ text: "x", image: { caption: "no pixels" } }, "image"],
    ];
    for (const [args, field] of cases) {
      const refused = await callFailing(client, "cairn_remember", args);
      assert.equal(refused.error.field, field, JSON.stringify(args));
    }
    const corrupt = await callFailing(client, "cairn_remember", { text: "x", image: { data: "bm90IGFuIGltYWdl" } });
    assert.equal(corrupt.error.code, "input");
    assert.equal((await memory.listSessions(scope)).length, 0);
  });
});
