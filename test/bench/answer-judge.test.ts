import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type AnswerAssessment,
  answerFromEvidence,
  createAnswerJudge,
  judgeAnswer,
  summariseAnswers,
} from "../../src/bench/answer/answer-judge.ts";
import type { BenchQuestion } from "../../src/bench/dataset.ts";
import type { BenchContext } from "../../src/bench/method.ts";
import { searchMethod } from "../../src/bench/methods/search-method.ts";
import { replayHistory } from "../../src/bench/replay.ts";
import { ProviderError } from "../../src/core/errors.ts";
import { defaultBudget } from "../../src/evidence/budget.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import type { ChatModel } from "../../src/models/provider.ts";
import { fakeChatEachTest, type RecordedRequest } from "../models/fake-openai-server.ts";
import { drawPng, tempDir } from "../support/fixtures.ts";

type WireMessage = { role: string; content: string | WirePart[] };
type WirePart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };
type ChatRequest = {
  model: string;
  messages: WireMessage[];
  max_tokens?: number;
  response_format?: { type: string; json_schema: { name: string; schema: unknown; strict: boolean } };
};

const question: BenchQuestion = {
  id: "q1",
  text: "Where did Ana rent the kayak?",
  category: "single-hop",
  answer: "Lake Bled",
  gold: { turns: [], sessions: ["may"], images: [] },
};

const fake = fakeChatEachTest();
const openChat = () => fake.openChat();

/** The same endpoint behind a model that declares no vision, as a text-only server would. */
function withoutVision(chat: ChatModel): ChatModel {
  return { ...chat, supportsImages: false };
}

/** A replayed history with one photo, and the pack the default search makes for `question`. */
async function replayed(t: { after: (fn: () => void | Promise<void>) => void }) {
  const dir = tempDir(t);
  const png = new Uint8Array(await drawPng({ shape: "square", color: "#f80", background: "#39f" }));
  const hash = createHashModels();
  const history = await replayHistory(
    {
      id: "ana",
      sessions: [
        {
          session: "may",
          time: "2024-05-01T10:00:00Z",
          turns: [
            {
              speaker: "Ana",
              text: "We rented a kayak on Lake Bled.",
              images: [{ data: png, caption: "orange kayak" }],
            },
            { speaker: "Ben", text: "The kayak rental was forty euros." },
          ],
        },
        {
          session: "june",
          time: "2024-06-01T10:00:00Z",
          turns: [{ speaker: "Ana", text: "Bought a striped beach towel." }],
        },
      ],
    },
    { models: hash, dir },
  );
  t.after(() => history.memory.close());
  const context: BenchContext = { ...history, budget: defaultBudget };
  const retrieval = await searchMethod("cairn", "default search", {}).retrieve(context, question, null);
  return { context, retrieval, png };
}

function chatRequests(): ChatRequest[] {
  return fake.server.requestsTo("/chat/completions").map((request: RecordedRequest) => request.body as ChatRequest);
}

function userParts(request: ChatRequest): WirePart[] {
  const user = request.messages.find((message) => message.role === "user");
  assert.ok(user, "a user message");
  return typeof user.content === "string" ? [{ type: "text", text: user.content }] : user.content;
}

function allText(request: ChatRequest): string {
  return request.messages
    .flatMap((message) =>
      typeof message.content === "string"
        ? [message.content]
        : message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])),
    )
    .join("\n");
}

function imageUrls(request: ChatRequest): string[] {
  return userParts(request).flatMap((part) => (part.type === "image_url" ? [part.image_url.url] : []));
}

async function providerError(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => assert.fail("expected a ProviderError"),
    (reason: unknown) => reason,
  );
  assert.ok(error instanceof ProviderError, `expected ProviderError, got ${String(error)}`);
  return error;
}

describe("createAnswerJudge().assess", () => {
  it("answers from the pack's text and original images, then judges against the gold answer", async (t) => {
    const { context, retrieval, png } = await replayed(t);
    assert.ok(retrieval.images >= 1, "the pack carries the photo");
    const chat = openChat();
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-judge-correct" });

    const assessment = await createAnswerJudge({ answerer: chat, judge: chat, maxImages: 4 }).assess(
      context,
      question,
      retrieval,
    );

    const [answerRequest, judgeRequest] = chatRequests();
    assert.ok(answerRequest && judgeRequest);
    const evidence = allText(answerRequest);
    assert.match(evidence, /Wed 2024-05-01 10:00 UTC · Ana: We rented a kayak on Lake Bled\./);
    assert.match(evidence, /caption: "orange kayak"/);
    assert.match(evidence, /Question: Where did Ana rent the kayak\?/);
    assert.match(evidence, /not mentioned/);
    assert.deepEqual(imageUrls(answerRequest), [`data:image/png;base64,${Buffer.from(png).toString("base64")}`]);
    assert.equal(answerRequest.response_format, undefined);
    assert.equal(typeof answerRequest.max_tokens, "number");

    assert.equal(judgeRequest.response_format?.type, "json_schema");
    assert.equal(judgeRequest.response_format?.json_schema.name, "judgement");
    assert.equal(judgeRequest.response_format?.json_schema.strict, true);
    assert.match(allText(judgeRequest), /Gold answer: Lake Bled\nCandidate answer: Lake Bled/);

    assert.equal(assessment.questionId, "q1");
    assert.equal(assessment.category, "single-hop");
    assert.equal(assessment.answer, "Lake Bled");
    assert.equal(assessment.correct, true);
    assert.match(assessment.reason, /same place/);
    assert.equal(assessment.images, 1);
    assert.equal(assessment.estimated, true, "ChatModel reports no usage, so tokens are estimates");
    assert.ok(assessment.promptTokens > 20, `prompt tokens ${assessment.promptTokens}`);
    assert.equal(assessment.completionTokens, 3);
    assert.deepEqual(assessment.warnings, []);
  });

  it("gives a model without vision the captions only, no image parts", async (t) => {
    const { context, retrieval } = await replayed(t);
    const chat = withoutVision(openChat());
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-judge-correct" });

    const assessment = await createAnswerJudge({ answerer: chat, judge: chat, maxImages: 4 }).assess(
      context,
      question,
      retrieval,
    );

    const [answerRequest] = chatRequests();
    assert.ok(answerRequest);
    assert.deepEqual(imageUrls(answerRequest), []);
    const user = answerRequest.messages.find((message) => message.role === "user");
    assert.equal(typeof user?.content, "string", "text-only readers get plain string content");
    assert.match(allText(answerRequest), /image \(not shown\); caption: "orange kayak"/);
    assert.equal(assessment.images, 0);
    assert.equal(assessment.correct, true);
  });

  it("shows no pixels to a method whose pack charged no images (caption RAG)", async (t) => {
    const { context } = await replayed(t);
    const captionRag = searchMethod("caption-rag", "captions only", { vision: false, useQueryImage: false });
    const retrieval = await captionRag.retrieve(context, question, null);
    assert.equal(retrieval.images, 0);
    const chat = openChat();
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-judge-correct" });

    await createAnswerJudge({ answerer: chat, judge: chat, maxImages: 4 }).assess(context, question, retrieval);

    const [answerRequest] = chatRequests();
    assert.ok(answerRequest);
    assert.deepEqual(imageUrls(answerRequest), []);
    assert.match(allText(answerRequest), /caption: "orange kayak"/);
  });

  it("does not ask the judge when the question has no gold answer", async (t) => {
    const { context, retrieval } = await replayed(t);
    const chat = openChat();
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    const { answer: _, ...unanswerable } = question;

    const assessment = await createAnswerJudge({ answerer: chat, judge: chat, maxImages: 4 }).assess(
      context,
      unanswerable,
      retrieval,
    );

    assert.equal(chatRequests().length, 1);
    assert.equal(assessment.correct, null);
    assert.match(assessment.reason, /no gold answer/);
  });

  it("attaches the question's own image after the evidence", async (t) => {
    const { context, retrieval } = await replayed(t);
    const queryPng = new Uint8Array(await drawPng({ shape: "circle", color: "#0a0" }));
    const chat = openChat();
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-judge-correct" });

    const assessment = await createAnswerJudge({ answerer: chat, judge: chat, maxImages: 4 }).assess(
      context,
      question,
      retrieval,
      queryPng,
    );

    const [answerRequest] = chatRequests();
    assert.ok(answerRequest);
    const urls = imageUrls(answerRequest);
    assert.equal(urls.length, 2);
    assert.equal(urls[1], `data:image/png;base64,${Buffer.from(queryPng).toString("base64")}`);
    assert.match(allText(answerRequest), /The question refers to this image:/);
    assert.equal(assessment.images, 2);
  });

  it("surfaces a judge failure as ProviderError instead of grading the answer", async (t) => {
    const { context, retrieval } = await replayed(t);
    const chat = openChat();
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-judge-invalid" });

    const error = await providerError(
      createAnswerJudge({ answerer: chat, judge: chat, maxImages: 4 }).assess(context, question, retrieval),
    );

    assert.match(error.message, /judgement failed validation/);
  });
});

describe("answerFromEvidence", () => {
  it("attaches at most maxImages images, in pack order, and describes the rest", async (t) => {
    const { context, retrieval } = await replayed(t);
    const nodes = retrieval.selected.flatMap((id) => context.nodes.get(id) ?? []);
    const chat = openChat();
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-answer" });

    const result = await answerFromEvidence(
      chat,
      question,
      { nodes, imagesFor: async () => assert.fail("no image may be loaded with maxImages 0") },
      { maxImages: 0, maxTokens: 20 },
    );

    const [request] = chatRequests();
    assert.ok(request);
    assert.equal(request.max_tokens, 20);
    assert.deepEqual(imageUrls(request), []);
    assert.match(allText(request), /image \(not shown\); caption: "orange kayak"/);
    assert.equal(result.answer, "Lake Bled");
    assert.equal(result.images, 0);
  });

  it("surfaces a failed answer call as ProviderError", async () => {
    const chat = openChat();
    fake.server.failNext("/chat/completions", "bad-request");

    const error = await providerError(
      answerFromEvidence(chat, question, { nodes: [], imagesFor: async () => assert.fail() }, { maxImages: 4 }),
    );

    assert.equal(error.model, "gpt-4o-mini");
    assert.match(error.message, /HTTP 400/);
  });
});

describe("judgeAnswer", () => {
  it("parses a correct verdict", async () => {
    const chat = openChat();
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-judge-correct" });

    const verdict = await judgeAnswer(chat, question, "Lake Bled", "at Lake Bled");

    assert.deepEqual(verdict, {
      correct: true,
      reason: "The candidate names Lake Bled, the same place as the gold answer.",
    });
  });

  it("parses an incorrect verdict", async () => {
    const chat = openChat();
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-judge-incorrect" });

    const verdict = await judgeAnswer(chat, question, "Lake Bled", "Lake Como");

    assert.equal(verdict.correct, false);
    assert.match(verdict.reason, /Lake Como/);
    const [request] = chatRequests();
    assert.ok(request);
    assert.deepEqual(request.response_format?.json_schema.schema, {
      type: "object",
      properties: {
        correct: { type: "boolean", description: "whether the candidate answer matches the gold answer" },
        reason: { type: "string", description: "one short sentence explaining the verdict" },
      },
      required: ["correct", "reason"],
      additionalProperties: false,
    });
  });

  it("rejects a verdict outside the schema with ProviderError keeping the raw output", async () => {
    const chat = openChat();
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-judge-invalid" });

    const error = await providerError(judgeAnswer(chat, question, "Lake Bled", "Lake Bled"));

    assert.match(error.message, /structured output judgement failed validation: correct/);
    assert.equal(error.body, '{"correct": "yes", "reason": null}');
  });

  it("rejects a verdict that is not JSON with ProviderError", async () => {
    const chat = openChat();
    fake.server.replyNext("/chat/completions", { fixture: "chat-completion-invalid-json" });

    const error = await providerError(judgeAnswer(chat, question, "Lake Bled", "Lake Bled"));

    assert.match(error.message, /not valid JSON/);
  });

  it("wraps a failure of any other judge model in ProviderError", async () => {
    const broken: ChatModel = {
      id: "rule-judge",
      provider: "custom",
      supportsImages: false,
      complete: async () => "",
      completeJson: async (_messages, schema) => schema.parse({ correct: 1 }),
    };

    const error = await providerError(judgeAnswer(broken, question, "Lake Bled", "Lake Bled"));

    assert.equal(error.provider, "custom");
    assert.equal(error.model, "rule-judge");
    assert.match(error.message, /judge failed/);
  });
});

describe("summariseAnswers", () => {
  const assessment = (overrides: Partial<AnswerAssessment>): AnswerAssessment => ({
    questionId: "q",
    category: "a",
    answer: "x",
    correct: true,
    reason: "",
    promptTokens: 100,
    completionTokens: 4,
    estimated: true,
    images: 0,
    warnings: [],
    ...overrides,
  });

  it("reports accuracy over judged answers, overall and per category", () => {
    const { overall, byCategory } = summariseAnswers([
      assessment({ category: "b", correct: true, promptTokens: 200, images: 2 }),
      assessment({ category: "a", correct: false, answer: "Not mentioned." }),
      assessment({ category: "a", correct: true }),
      assessment({ category: "a", correct: null }),
    ]);

    assert.equal(overall.answered, 4);
    assert.equal(overall.judged, 3);
    assert.equal(overall.correct, 2);
    assert.equal(overall.accuracy, 2 / 3);
    assert.equal(overall.abstentionRate, 1 / 4);
    assert.equal(overall.meanPromptTokens, 125);
    assert.equal(overall.meanCompletionTokens, 4);
    assert.equal(overall.imagesMean, 0.5);
    assert.equal(overall.tokensEstimated, true);
    assert.deepEqual(Object.keys(byCategory), ["a", "b"]);
    assert.equal(byCategory.a?.accuracy, 1 / 2);
    assert.equal(byCategory.b?.accuracy, 1);
  });

  it("has no accuracy when nothing was judged", () => {
    assert.equal(summariseAnswers([assessment({ correct: null })]).overall.accuracy, null);
    const empty = summariseAnswers([]).overall;
    assert.equal(empty.accuracy, null);
    assert.equal(empty.abstentionRate, null);
    assert.equal(empty.answered, 0);
  });
});
