import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, type ModelMessage, stepCountIs } from "ai";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { cairnTools, liftToolImages } from "../../src/surfaces/ai-sdk/index.ts";
import { type FakeOpenAIServer, startFakeOpenAIServer } from "../models/fake-openai-server.ts";
import { drawPng, tempDir } from "../support/fixtures.ts";

const ana = { tenant: "acme", user: "ana" };
const rival = { tenant: "globex", user: "ana" };

/** A chat completion in OpenAI's recorded shape that calls one tool. */
function toolCall(name: string, input: unknown): { body: string } {
  const recorded = {
    id: "chatcmpl-test",
    object: "chat.completion",
    created: 1764536101,
    model: "gpt-4.1-mini-2025-04-14",
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{ id: `call_${name}`, type: "function", function: { name, arguments: JSON.stringify(input) } }],
        },
        finish_reason: "tool_calls",
      },
    ],
    usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
  };
  return { body: JSON.stringify(recorded) };
}

async function setUp(t: TestContext) {
  const server = await startFakeOpenAIServer();
  const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels(), ownsModels: true });
  t.after(async () => {
    await memory.close();
    await server.close();
  });
  const model = createOpenAICompatible({ name: "openai", baseURL: server.url })("gpt-4.1-mini");
  return { server, memory, model };
}

/** What the model read back as the result of its last tool call. */
function lastToolMessage(server: FakeOpenAIServer): string {
  const requests = server.requestsTo("/chat/completions");
  const body = requests.at(-1)?.body as { messages: { role: string; content: unknown }[] };
  return String(body.messages.filter((message) => message.role === "tool").at(-1)?.content);
}

describe("cairnTools", () => {
  it("files a note with a base64 image under the app's conversation, with the original bytes kept", async (t) => {
    const { server, memory, model } = await setUp(t);
    const png = await drawPng({ shape: "stripes", color: "#fa0", size: 120 });
    server.replyNext(
      "/chat/completions",
      toolCall("cairn_remember", {
        text: "Ana's kitchen wallpaper has orange stripes",
        images: [{ data: png.toString("base64"), caption: "the wallpaper" }],
        speaker: "Ana",
      }),
    );
    server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    const tools = cairnTools(memory, ana, { conversation: "chat-42" });
    await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: "remember my wallpaper" });
    const receipt = JSON.parse(lastToolMessage(server)) as { sessionKey: string; rawNodeId: string };
    assert.match(receipt.sessionKey, /^remember\/chat-42\/\d{4}-\d{2}-\d{2}\/0001$/);
    const node = await memory.getRawNode(ana, receipt.rawNodeId);
    assert.equal(node.speaker, "Ana");
    assert.equal(node.source, "ai-sdk:remember");
    assert.equal(node.images[0]?.caption, "the wallpaper");
    const blob = await memory.getBlob(ana, node.images[0]?.hash ?? "");
    assert.ok(Buffer.from(blob.data).equals(png));
  });

  it("a rejected note reaches the model as Cairn's error and writes nothing", async (t) => {
    const { server, memory, model } = await setUp(t);
    server.replyNext(
      "/chat/completions",
      toolCall("cairn_remember", { text: "my bike", images: [{ path: "bike.png" }] }),
    );
    server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    const result = await generateText({
      model,
      tools: cairnTools(memory, ana),
      stopWhen: stepCountIs(3),
      prompt: "hi",
    });
    assert.equal(result.steps[0]?.content.find((part) => part.type === "tool-error")?.type, "tool-error");
    assert.match(lastToolMessage(server), /images\[0\]\.path: this agent reads no image files/);
    assert.deepEqual(await memory.listSessions(ana), []);

    server.replyNext("/chat/completions", toolCall("cairn_remember", { text: "when?", time: "5" }));
    server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    await generateText({ model, tools: cairnTools(memory, ana), stopWhen: stepCountIs(3), prompt: "hi" });
    assert.match(lastToolMessage(server), /time: .*RFC 3339/);
    assert.deepEqual(await memory.listSessions(ana), []);
  });

  it("acts on the app's scope only: another tenant's image and turn look missing", async (t) => {
    const { server, memory, model } = await setUp(t);
    const png = await drawPng({ shape: "square", color: "#0a0", size: 64 });
    const theirs = await memory.remember(rival, "the globex prototype", { images: [{ data: png }] });
    const hash = (await memory.getRawNode(rival, theirs.rawNodeId)).images[0]?.hash;
    assert.ok(hash);
    const tools = cairnTools(memory, ana);
    for (const [name, input] of [
      ["cairn_get_image", { hash }],
      ["cairn_get_raw_node", { id: theirs.rawNodeId }],
    ] as const) {
      server.replyNext("/chat/completions", toolCall(name, input));
      server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
      await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: "show me" });
      assert.match(lastToolMessage(server), /not found/);
      assert.ok(!lastToolMessage(server).includes(png.toString("base64").slice(0, 100)));
    }
    server.replyNext("/chat/completions", toolCall("cairn_search", { query: "globex prototype" }));
    server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: "find it" });
    assert.deepEqual((JSON.parse(lastToolMessage(server)) as { items: unknown[] }).items, []);
  });

  it("cairn_get_raw_node returns the turn with its images, thumbnails when asked", async (t) => {
    const { server, memory, model } = await setUp(t);
    const png = await drawPng({ shape: "circle", color: "#a0a", size: 400 });
    const note = await memory.remember(ana, "Miso on the sofa", { images: [{ data: png, caption: "Miso" }] });
    const hash = (await memory.getRawNode(ana, note.rawNodeId)).images[0]?.hash ?? "";
    server.replyNext("/chat/completions", toolCall("cairn_get_raw_node", { id: note.rawNodeId, images: "thumbnail" }));
    server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    const result = await generateText({
      model,
      tools: cairnTools(memory, ana),
      stopWhen: stepCountIs(3),
      prepareStep: ({ messages }) => ({ messages: liftToolImages(messages) }),
      prompt: "show me",
    });
    const output = result.steps[0]?.toolResults[0]?.output as {
      node: { text: string };
      images: { hash: string; mediaType: string; size: string; data: string }[];
    };
    assert.equal(output.node.text, "Miso on the sofa");
    const thumbnail = (await memory.getBlob(ana, hash, { thumbnail: true })).data;
    assert.deepEqual(output.images, [
      { hash, mediaType: "image/webp", size: "thumbnail", data: Buffer.from(thumbnail).toString("base64") },
    ]);
    const sent = server.requestsTo("/chat/completions").at(-1)?.body as {
      messages: { role: string; content: unknown }[];
    };
    const user = sent.messages.at(-1) as { role: string; content: { type: string; image_url?: { url: string } }[] };
    assert.equal(user.role, "user");
    assert.equal(
      user.content.find((part) => part.type === "image_url")?.image_url?.url,
      `data:image/webp;base64,${Buffer.from(thumbnail).toString("base64")}`,
    );
  });
});

describe("liftToolImages", () => {
  const image = { type: "image-data" as const, data: "aGVsbG8=", mediaType: "image/png" };
  const messages: ModelMessage[] = [
    { role: "user", content: "show me both" },
    {
      role: "assistant",
      content: [
        { type: "tool-call", toolCallId: "a", toolName: "cairn_get_image", input: {} },
        { type: "tool-call", toolCallId: "b", toolName: "cairn_search", input: {} },
      ],
    },
    {
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "a",
          toolName: "cairn_get_image",
          output: { type: "content", value: [{ type: "text", text: "image x" }, image] },
        },
        { type: "tool-result", toolCallId: "b", toolName: "cairn_search", output: { type: "json", value: { n: 1 } } },
      ],
    },
    { role: "assistant", content: "Here they are." },
  ];

  it("moves tool images into a user message right after the tool messages and leaves the input as it was", () => {
    const before = structuredClone(messages);
    const lifted = liftToolImages(messages);
    assert.deepEqual(messages, before);
    assert.deepEqual(
      lifted.map((message) => message.role),
      ["user", "assistant", "tool", "user", "assistant"],
    );
    const tool = lifted[2] as Extract<ModelMessage, { role: "tool" }>;
    assert.deepEqual(tool.content[0], {
      type: "tool-result",
      toolCallId: "a",
      toolName: "cairn_get_image",
      output: {
        type: "content",
        value: [
          { type: "text", text: "image x" },
          { type: "text", text: "[image 1: sent in the next user message]" },
        ],
      },
    });
    assert.deepEqual(tool.content[1], (messages[2] as Extract<ModelMessage, { role: "tool" }>).content[1]);
    assert.deepEqual(lifted[3], {
      role: "user",
      content: [
        { type: "text", text: "The image returned by tool call a:" },
        { type: "image", image: "aGVsbG8=", mediaType: "image/png" },
      ],
    });
    assert.deepEqual(liftToolImages(lifted), lifted, "nothing left to lift");
  });
});
