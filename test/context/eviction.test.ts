import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { manageContext } from "../../src/context/manage-context.ts";
import { summarisation } from "../../src/context/managers/summarisation.ts";
import { chatSummariser } from "../../src/context/managers/summariser.ts";
import { InputError } from "../../src/core/errors.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { createOpenAIChat } from "../../src/models/openai-provider.ts";
import { type FakeOpenAIServer, startFakeOpenAIServer } from "../models/fake-openai-server.ts";
import { tempDir } from "../support/fixtures.ts";
import { agentTrajectory } from "./support.ts";

const scope = { tenant: "t1", user: "u1" };
const budget = { window: 24_000, trigger: 12_000, keepRecent: 4 };

describe("eviction into memory", () => {
  it("what a manager drops is stored as a memory session, searchable, and the context points at it", async (t) => {
    const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels() });
    t.after(() => memory.close());
    const trajectory = await agentTrajectory(40, { wordsPerResult: 500 });
    const context = await manageContext(trajectory, { manager: "sliding-window", budget, memory, scope });
    assert.ok(context.evicted, "an eviction pointer");
    const pointer = context.messages.find(
      (message) => typeof message.content === "string" && message.content.includes("keyed context:agent:"),
    );
    assert.ok(pointer, "the working context says where the dropped messages are");
    const sessions = await memory.listSessions(scope);
    assert.equal(sessions.length, context.evicted.written);
    assert.ok(sessions.every((session) => session.key.startsWith("context:agent:")));
    const nodes = (await Promise.all(sessions.map((session) => memory.listRawNodes(scope, session.id)))).flat();
    const evictedIds = new Set(nodes.map((node) => (node.metadata as { messageId?: string } | null)?.messageId));
    assert.ok(evictedIds.has("t0") && evictedIds.has("t2"), "old tool results are in memory");
    assert.equal(nodes.filter((node) => node.images.length > 0).length > 0, true, "with their screenshots as pixels");
    const found = await memory.search(scope, "w0xresult");
    assert.ok(
      found.items.some((item) => item.text.includes("w0xresult")),
      "the agent can search what was evicted",
    );
    // Managing the same history again writes nothing new.
    const again = await manageContext(trajectory, { manager: "sliding-window", budget, memory, scope });
    assert.equal(again.evicted?.written, 0);
    assert.equal((await memory.listSessions(scope)).length, sessions.length);
  });

  it("without a memory the result warns that dropped content was not kept; memory without scope is refused", async () => {
    const trajectory = await agentTrajectory(40, { wordsPerResult: 500 });
    const context = await manageContext(trajectory, { manager: "discard-all", budget });
    assert.ok(context.warnings.some((warning) => warning.includes("not kept")));
    await assert.rejects(
      manageContext(trajectory, {
        memory: { addSession: async () => ({ sessionId: "x" }), getSession: async () => ({}) },
      }),
      InputError,
    );
  });

  it("raw OpenAI-format messages are validated: a bad one names its field and nothing is stored", async (t) => {
    const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels() });
    t.after(() => memory.close());
    const error = await manageContext(
      [
        { role: "user", content: "hi" },
        { role: "tool", content: "x" },
      ],
      { memory, scope },
    ).catch((caught) => caught);
    assert.ok(error instanceof InputError);
    assert.equal(error.field, "messages[1].toolCallId");
    const remote = await manageContext([
      { role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }] },
    ]).catch((caught) => caught);
    assert.ok(remote instanceof InputError && /not fetched/.test(remote.message));
    assert.equal((await memory.listSessions(scope)).length, 0);
  });
});

describe("LLM summarisation through the openai provider", () => {
  let server: FakeOpenAIServer;
  before(async () => {
    server = await startFakeOpenAIServer();
  });
  after(() => server.close());

  it("sends the previous summary and the new messages, and uses the model's summary within the limit", async () => {
    server.replyNext("/chat/completions", { fixture: "chat-completion-summary" });
    const { chat } = createOpenAIChat({ baseUrl: server.url, apiKey: "sk-test", model: "gpt-4o-mini" });
    const trajectory = await agentTrajectory(40, { wordsPerResult: 500 });
    const context = await manageContext(trajectory, {
      manager: summarisation({ summariser: chatSummariser(chat), maxSummaryTokens: 500 }),
      budget,
    });
    const [request] = server.requestsTo("/chat/completions");
    const body = request?.body as {
      messages: { role: string; content: string }[];
      max_tokens?: number;
      max_completion_tokens?: number;
    };
    assert.match(body.messages[1]?.content ?? "", /New messages:\n\[task user · Ana\][\s\S]*\n\[a0 assistant\]/);
    const summary = context.messages.find(
      (message) => typeof message.content === "string" && message.content.startsWith("[summary"),
    );
    assert.match(String(summary?.content), /chat:gpt-4o-mini/);
    assert.match(String(summary?.content), /quarterly revenue/);
  });
});
