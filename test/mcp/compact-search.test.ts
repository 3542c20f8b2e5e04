import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { createMcpServer } from "../../src/surfaces/mcp/server.ts";
import { tempDir } from "../support/fixtures.ts";
import { call, callFailing, images, links, texts } from "./support.ts";

const examples = join(import.meta.dirname, "../../examples");
const scope = { tenant: "demo", user: "ana" };
/** The demo's questions (`cairn demo`) and a query image: what a new user asks first. */
const demoQueries = [
  { text: "When is the cat's vaccination appointment?" },
  { text: "vet invoice total" },
  { text: "photo of my bicycle" },
  { image: { data: readFileSync(join(examples, "queries/bike-again.png")).toString("base64") } },
];

/** The example memory of `npm start` (examples/demo.jsonl), with hash models, behind a real MCP client. */
async function demoMemory(t: TestContext) {
  const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels(), ownsModels: true });
  for (const line of readFileSync(join(examples, "demo.jsonl"), "utf8").split("\n").filter(Boolean)) {
    const { user: _user, ...session } = JSON.parse(line);
    await memory.addSession(scope, session, { baseDir: examples });
  }
  const server = createMcpServer(memory, scope);
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "cairn-test", version: "1.0.0" });
  await client.connect(clientSide);
  t.after(async () => {
    await client.close();
    await memory.close();
  });
  return { client, memory };
}

/** The bytes a host receives for a tool result (its JSON-RPC result, as sent). */
const bytesOf = (result: CallToolResult) => Buffer.byteLength(JSON.stringify(result));

type Compact = {
  items: {
    rawNodeId: string;
    text: string;
    provenance: { sessionKey: string; sessionId?: string; turn: number; time: string };
    images: { hash: string; mediaType: string }[];
  }[];
  budget: { limits: { textTokens: number } };
  route?: unknown;
};

describe("cairn_search's compact default", () => {
  it("answers each demo question in at most 8 KiB, text first, images as links, no pixels", async (t) => {
    const { client } = await demoMemory(t);
    let linked = 0;
    for (const query of demoQueries) {
      const result = await call(client, "cairn_search", query);
      const size = bytesOf(result);
      t.diagnostic(`${JSON.stringify(query).slice(0, 50)}: ${size} bytes`);
      assert.ok(size <= 8 * 1024, `${size} bytes for ${JSON.stringify(query).slice(0, 60)}`);
      assert.equal(result.content[0]?.type, "text");
      assert.equal(images(result.content).length, 0);
      linked += links(result.content).length;
      const pack = result.structuredContent as Compact;
      assert.equal(pack.budget.limits.textTokens, 2000);
      assert.equal(pack.route, undefined, "the route trace is left to detail: full");
      assert.ok(pack.items.length > 0);
    }
    assert.ok(linked > 0, "the demo's images come back as links");
  });

  it("was over ten times larger with original images attached (the old default)", async (t) => {
    const { client } = await demoMemory(t);
    const compact = await call(client, "cairn_search", { text: "vet invoice total" });
    const originals = await call(client, "cairn_search", {
      text: "vet invoice total",
      images: "original",
      detail: "full",
    });
    t.diagnostic(`compact ${bytesOf(compact)} bytes, originals + full pack ${bytesOf(originals)} bytes`);
    assert.ok(bytesOf(originals) > 5 * bytesOf(compact));
    assert.ok(images(originals.content).length > 0);
    assert.ok((originals.structuredContent as Compact).route, "detail: full carries the route trace");
    assert.ok((originals.structuredContent as Compact).items[0]?.provenance.sessionId);
  });

  it("links each image to its original, whose pixels come through cairn_get_image and the resources", async (t) => {
    const { client, memory } = await demoMemory(t);
    const result = await call(client, "cairn_search", { text: "photo of my bicycle" });
    const link = links(result.content)[0];
    assert.ok(link, "a resource link");
    assert.match(link.uri, /^cairn:\/\/blobs\/[0-9a-f]{64}$/);
    assert.equal(link.mimeType, "image/png");
    const hash = link.uri.slice("cairn://blobs/".length);
    const original = await memory.getBlob(scope, hash);

    const got = await call(client, "cairn_get_image", { hash: link.uri });
    assert.equal(images(got.content)[0]?.data, Buffer.from(original.data).toString("base64"));
    const thumbnail = await call(client, "cairn_get_image", { hash, size: "thumbnail" });
    assert.equal(images(thumbnail.content)[0]?.mimeType, "image/webp");

    const read = await client.readResource({ uri: link.uri });
    assert.equal((read.contents[0] as { blob: string }).blob, Buffer.from(original.data).toString("base64"));
    const thumb = await client.readResource({ uri: `cairn://thumbnails/${hash}` });
    assert.equal(thumb.contents[0]?.mimeType, "image/webp");

    const missing = await callFailing(client, "cairn_get_image", { hash: "0".repeat(64) });
    assert.equal(missing.error.code, "not_found");
  });

  it("keeps within a text budget the caller sets", async (t) => {
    const { client } = await demoMemory(t);
    const result = await call(client, "cairn_search", { text: "bike", budget: { textTokens: 20 } });
    const pack = result.structuredContent as Compact & { budget: { used: { textTokens: number } } };
    assert.ok(pack.budget.used.textTokens <= 20);
    assert.equal(pack.budget.limits.textTokens, 20);
  });
});

describe("what the MCP server declares", () => {
  it("declares tools, resources, prompts and logging, and honours logging/setLevel", async (t) => {
    const { client } = await demoMemory(t);
    const capabilities = client.getServerCapabilities();
    assert.ok(capabilities?.tools);
    assert.ok(capabilities?.resources);
    assert.ok(capabilities?.prompts);
    assert.ok(capabilities?.logging);
    // Nothing is ever notified (fixed sets; /mcp is stateless), so nothing claims it is.
    assert.equal(capabilities?.tools?.listChanged, false);
    assert.equal(capabilities?.resources?.listChanged, false);
    assert.equal(capabilities?.resources?.subscribe, false);
    assert.equal(capabilities?.prompts?.listChanged, false);
    assert.deepEqual(await client.setLoggingLevel("warning"), {});
  });

  it("offers a recall prompt that carries the evidence about a topic", async (t) => {
    const { client } = await demoMemory(t);
    const { prompts } = await client.listPrompts();
    assert.deepEqual(
      prompts.map((prompt) => prompt.name),
      ["recall"],
    );
    const prompt = await client.getPrompt({ name: "recall", arguments: { topic: "vaccination" } });
    const message = prompt.messages[0];
    assert.equal(message?.role, "user");
    assert.ok(message?.content.type === "text");
    assert.match(message.content.text, /Recall what you know about "vaccination"/);
    assert.match(message.content.text, /May 21st at Harbor Vet Clinic/);
    assert.match(texts([message.content]), /session 2024-05-08-miso/);
  });
});
