import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createContextAnswerJudge, toChatMessages } from "../../src/bench/context/context-answer.ts";
import { replayRetention } from "../../src/bench/context/context-replay.ts";
import type { ReplayTrajectory } from "../../src/bench/context/dataset-trajectory.ts";
import { defaultImageTokenRule } from "../../src/context/image-tokens.ts";
import { managerNamed } from "../../src/context/managers/index.ts";
import { defaultRenderSettings } from "../../src/context/render/page-layout.ts";
import type { TrajectoryMessage } from "../../src/context/trajectory.ts";
import { image, sentence } from "../context/support.ts";
import { fakeChatEachTest } from "../models/fake-openai-server.ts";

type WirePart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };
type ChatRequest = { messages: { role: string; content: string | WirePart[] }[]; response_format?: { type: string } };

const fake = fakeChatEachTest();
const openChat = () => fake.openChat();

/** One history: a photo of the kayak at Lake Bled in its first turn, then enough talk to push it into the pages. */
async function lakeHistory(): Promise<ReplayTrajectory> {
  const messages: TrajectoryMessage[] = [];
  for (let turn = 0; turn < 50; turn++) {
    messages.push({
      id: `h/${turn}`,
      role: turn % 2 ? "assistant" : "user",
      text: turn === 0 ? "We rented the orange kayak at Lake Bled." : sentence(`t${turn}`, 120, turn),
      images: turn === 0 ? [await image("h/0#img0", "orange kayak")] : [],
      artifacts: [],
      toolCalls: [],
    });
  }
  return {
    trajectory: { id: "lake", messages },
    checkpoints: [
      {
        after: messages.length - 1,
        history: "h",
        questions: [
          {
            id: "q1",
            text: "Where did they rent the kayak?",
            category: "single-hop",
            answer: "Lake Bled",
            gold: { turns: ["D1:0"], sessions: [], images: ["IMG0"] },
          },
        ],
      },
    ],
    turnMessages: new Map([["h|D1:0", ["h/0"]]]),
    imageIds: new Map([["h|IMG0", ["h/0#img0"]]]),
  };
}

describe("answer accuracy from the working context (part c)", () => {
  it("sends VERA's working context (pages and the native photo as pixels) and the question, then judges", async () => {
    const chat = openChat();
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-judge-correct" });
    const result = await replayRetention(await lakeHistory(), managerNamed("vera"), {
      budget: { window: 16_000, trigger: 8_000, keepRecent: 4, managedShare: 0.5 },
      imageRule: defaultImageTokenRule,
      render: defaultRenderSettings,
      answer: createContextAnswerJudge({ answerer: chat, judge: chat }),
    });
    const [answerRequest, judgeRequest] = fake.server
      .requestsTo("/chat/completions")
      .map((request) => request.body as ChatRequest);
    assert.ok(answerRequest && judgeRequest);
    const parts = answerRequest.messages.flatMap((message) =>
      typeof message.content === "string" ? [] : message.content,
    );
    const urls = parts.flatMap((part) => (part.type === "image_url" ? [part.image_url.url] : []));
    assert.ok(urls.length >= 2, "at least one rendered page and the photo");
    assert.ok(urls.every((url) => url.startsWith("data:image/png;base64,")));
    const text = JSON.stringify(answerRequest.messages);
    assert.match(text, /rendered as/);
    assert.match(text, /Question: Where did they rent the kayak\?/);
    assert.match(text, /not mentioned/);
    assert.equal(judgeRequest.response_format?.type, "json_schema");
    assert.match(JSON.stringify(judgeRequest.messages), /Lake Bled/);
    assert.deepEqual(
      { answered: result.answers?.answered, judged: result.answers?.judged, accuracy: result.answers?.accuracy },
      { answered: 1, judged: 1, accuracy: 1 },
    );
    assert.equal(result.imageNative, 1);
  });

  it("counts a wrong answer as wrong, and runs no model without an answer judge", async () => {
    const chat = openChat();
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-judge-incorrect" });
    const options = {
      budget: { window: 16_000, trigger: 8_000, keepRecent: 4, managedShare: 0.5 },
      imageRule: defaultImageTokenRule,
      render: defaultRenderSettings,
    };
    const judged = await replayRetention(await lakeHistory(), managerNamed("discard-all"), {
      ...options,
      answer: createContextAnswerJudge({ answerer: chat, judge: chat }),
    });
    assert.equal(judged.answers?.accuracy, 0);
    const before = fake.server.requests.length;
    const plain = await replayRetention(await lakeHistory(), managerNamed("discard-all"), options);
    assert.equal(plain.answers, undefined);
    assert.equal(fake.server.requests.length, before);
  });

  it("turns tool messages into labelled text and, without vision, images into placeholders", () => {
    const messages = toChatMessages(
      [
        {
          role: "assistant",
          content: "Looking.",
          tool_calls: [{ id: "c1", type: "function", function: { name: "visit", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "c1", content: "Shop 7 is open." },
        {
          role: "user",
          content: [
            { type: "text", text: "a page" },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          ],
        },
      ],
      false,
    );
    assert.deepEqual(messages, [
      { role: "assistant", content: "Looking.\n[tool call c1] visit({})" },
      { role: "user", content: "[tool result for call c1]\nShop 7 is open." },
      { role: "user", content: "a page\n[an image the reader cannot see]" },
    ]);
    const vision = toChatMessages(
      [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }] }],
      true,
    );
    const content = vision[0]?.content;
    assert.ok(Array.isArray(content));
    assert.equal(content[0]?.type, "image");
  });
});
