import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";
import { z } from "zod";
import { ConfigError, InputError, ProviderError } from "../../src/core/errors.ts";
import { embedImages, embedTexts } from "../../src/models/model-calls.ts";
import { createOpenAIModels, type OpenAIModelsOptions } from "../../src/models/openai-provider.ts";
import type { ChatModel, Models } from "../../src/models/provider.ts";
import { type FakeOpenAIServer, startFakeOpenAIServer } from "./fake-openai-server.ts";

/** A 1×1 PNG. */
const PNG = Uint8Array.from(
  Buffer.from(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
    "base64",
  ),
);

const factsSchema = z.object({ facts: z.array(z.string()), confidence: z.number().min(0).max(1) });
const factsSpec = {
  name: "facts",
  jsonSchema: {
    type: "object",
    properties: { facts: { type: "array", items: { type: "string" } }, confidence: { type: "number" } },
    required: ["facts", "confidence"],
    additionalProperties: false,
  },
  parse: (value: unknown) => factsSchema.parse(value),
};

type EmbeddingsFixture = { data: { index: number; embedding: number[] }[] };

let server: FakeOpenAIServer;
let models: Models | undefined;

beforeEach(async () => {
  server = await startFakeOpenAIServer();
});

afterEach(async () => {
  await models?.close();
  models = undefined;
  await server.close();
});

function open(overrides: Partial<OpenAIModelsOptions> = {}): Models {
  models = createOpenAIModels({
    baseUrl: server.url,
    apiKey: "sk-test-123",
    textModel: "text-embedding-3-small",
    textDimensions: 8,
    chatModel: "gpt-4o-mini",
    ...overrides,
  });
  return models;
}

function openChat(): ChatModel {
  const chat = open().chat;
  assert.ok(chat, "chat model configured");
  return chat;
}

function norm(vector: ArrayLike<number>): number {
  return Math.sqrt(Array.from(vector).reduce((sum, value) => sum + value * value, 0));
}

function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>): void {
  assert.equal(actual.length, expected.length);
  for (let index = 0; index < actual.length; index += 1) {
    assert.ok(Math.abs((actual[index] ?? Number.NaN) - (expected[index] ?? Number.NaN)) < 1e-6, `component ${index}`);
  }
}

/** Asserts that `promise` rejects with a ProviderError and hands it back for further checks. */
async function providerError(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => assert.fail("expected a ProviderError"),
    (reason: unknown) => reason,
  );
  assert.ok(error instanceof ProviderError, `expected ProviderError, got ${String(error)}`);
  assert.equal(error.provider, "openai");
  return error;
}

describe("openai text embeddings", () => {
  it("sends model and input, orders by index and normalises to unit length", async () => {
    server.replyNext("/embeddings", { fixture: "embeddings-unordered" });
    const vectors = await open().text.embed(["alpha", "beta", "gamma"]);

    const [request] = server.requestsTo("/embeddings");
    assert.deepEqual(request?.body, { model: "text-embedding-3-small", input: ["alpha", "beta", "gamma"] });
    assert.equal(request?.headers["content-type"], "application/json");

    const recorded = server.fixture("embeddings-unordered") as EmbeddingsFixture;
    assert.deepEqual(
      recorded.data.map((item) => item.index),
      [2, 0, 1],
      "fixture is out of order",
    );
    assert.equal(vectors.length, 3);
    for (const [position, vector] of vectors.entries()) {
      assert.ok(vector instanceof Float32Array);
      assert.ok(Math.abs(norm(vector) - 1) < 1e-6);
      const source = recorded.data.find((item) => item.index === position)?.embedding ?? [];
      assertClose(
        vector,
        source.map((value) => value / norm(source)),
      );
    }
  });

  it("sends the API key as a bearer token, and no Authorization header without one", async () => {
    await open().text.embed(["with key"]);
    await models?.close();
    await open({ apiKey: undefined }).text.embed(["without key"]);

    const [withKey, withoutKey] = server.requestsTo("/embeddings");
    assert.equal(withKey?.headers.authorization, "Bearer sk-test-123");
    assert.equal(withoutKey?.headers.authorization, undefined);
  });

  it("splits inputs larger than maxBatchSize into several requests, keeping input order", async () => {
    const texts = ["one", "two", "three", "four", "five"];
    const vectors = await embedTexts(open({ maxBatchSize: 2 }).text, texts);

    const batches = server.requestsTo("/embeddings").map((request) => (request.body as { input: string[] }).input);
    assert.deepEqual(batches, [["one", "two"], ["three", "four"], ["five"]]);
    assert.equal(vectors.length, 5);
    // The default reply cycles the 4 recorded vectors per request, so input 3 ("three") gets recorded vector 0.
    const recorded = server.fixture("embeddings") as EmbeddingsFixture;
    assertClose(vectors[2] ?? [], recorded.data[0]?.embedding ?? []);
    assert.equal(open().text.maxBatchSize, 64);
  });

  it("makes no request for no input", async () => {
    assert.deepEqual(await open().text.embed([]), []);
    assert.equal(server.requests.length, 0);
  });

  it("rejects vectors whose length is not textDimensions, keeping the body", async () => {
    server.failNext("/embeddings", "wrong-dimensions");
    const error = await providerError(open().text.embed(["short"]));
    assert.match(error.message, /expected 8-d embeddings, received 6-d/);
    assert.equal(error.model, "text-embedding-3-small");
    assert.match(error.body ?? "", /"embedding"/);
  });

  it("rejects an answer with fewer vectors than inputs instead of returning them short", async () => {
    server.replyNext("/embeddings", { fixture: "embeddings-wrong-dimensions" });
    const error = await providerError(open({ textDimensions: 6 }).text.embed(["a", "b"]));
    assert.match(error.message, /expected 2 embeddings, received 1/);
  });

  it("rejects malformed JSON with the raw body", async () => {
    server.failNext("/embeddings", "malformed-json");
    const error = await providerError(open().text.embed(["cut off"]));
    assert.match(error.message, /not valid JSON/);
    assert.ok(error.body?.startsWith('{"object":"list"'));
  });

  it("rejects a well-formed answer of the wrong shape", async () => {
    server.replyNext("/embeddings", { body: JSON.stringify({ data: [{ index: 0, embedding: "AAAA" }] }) });
    const error = await providerError(open().text.embed(["base64?"]));
    assert.match(error.message, /unexpected shape: data\.0\.embedding/);
  });
});

describe("openai HTTP failures", () => {
  it("retries a 500 and then succeeds", async () => {
    server.failNext("/embeddings", "server-error");
    const vectors = await embedTexts(open().text, ["retry me"]);
    assert.equal(vectors.length, 1);
    assert.equal(server.requestsTo("/embeddings").length, 2);
  });

  it("gives up after maxRetries and reports the last status", async () => {
    server.failNext("/embeddings", "server-error");
    server.failNext("/embeddings", "server-error");
    const error = await providerError(embedTexts(open({ maxRetries: 1 }).text, ["still failing"]));
    assert.equal(server.requestsTo("/embeddings").length, 2);
    assert.match(error.message, /HTTP 500/);
    assert.match(error.body ?? "", /server_error/);
  });

  it("retries a 429, honouring Retry-After", async () => {
    server.replyNext("/embeddings", { status: 429, headers: { "retry-after": "0" }, body: '{"error":"slow down"}' });
    await embedTexts(open().text, ["rate limited"]);
    assert.equal(server.requestsTo("/embeddings").length, 2);
  });

  it("does not retry a 400 and surfaces the body and vendor message", async () => {
    server.failNext("/embeddings", "bad-request");
    const error = await providerError(open().text.embed(["bad"]));
    assert.equal(server.requestsTo("/embeddings").length, 1);
    assert.match(error.message, /^openai\/text-embedding-3-small: \/embeddings answered HTTP 400 Bad Request: /);
    assert.match(error.message, /'\$\.input' is invalid/);
    assert.match(error.body ?? "", /invalid_request_error/);
    assert.equal(error.code, "provider");
  });

  it("retries a network failure", async () => {
    let calls = 0;
    const flaky: typeof fetch = async (input, init) => {
      calls += 1;
      if (calls === 1) throw new TypeError("fetch failed", { cause: new Error("connect ECONNRESET") });
      return fetch(input, init);
    };
    await embedTexts(open({ fetch: flaky }).text, ["network"]);
    assert.equal(calls, 2);
    assert.equal(server.requestsTo("/embeddings").length, 1);
  });

  it("reports a network failure that persists, with the underlying cause", async () => {
    const down: typeof fetch = async () => {
      throw new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:1") });
    };
    const error = await providerError(embedTexts(open({ fetch: down, maxRetries: 0 }).text, ["down"]));
    assert.match(error.message, /request failed: fetch failed \(connect ECONNREFUSED/);
    assert.ok(error.cause instanceof TypeError);
  });

  it("times out a slow server without retrying", async () => {
    server.replyNext("/embeddings", { delayMs: 2_000, fixture: "embeddings" });
    const started = Date.now();
    const error = await providerError(open({ timeoutMs: 100 }).text.embed(["slow"]));
    assert.match(error.message, /timed out after 100 ms/);
    assert.ok(Date.now() - started < 1_500);
    assert.equal(server.requestsTo("/embeddings").length, 1);
  });

  it("passes an abort signal to an injected fetch that fires on timeout", async () => {
    let seen: AbortSignal | undefined;
    const hanging: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => {
        seen = init?.signal ?? undefined;
        seen?.addEventListener("abort", () => reject(seen?.reason));
      });
    const error = await providerError(open({ fetch: hanging, timeoutMs: 50 }).text.embed(["hang"]));
    assert.ok(seen?.aborted);
    assert.match(error.message, /timed out after 50 ms/);
  });

  it("aborts in-flight requests on close and refuses new ones", async () => {
    server.replyNext("/embeddings", { delayMs: 2_000, fixture: "embeddings" });
    const opened = open();
    const pending = opened.text.embed(["in flight"]);
    await waitFor(() => server.requests.length === 1);
    await opened.close();
    await opened.close();
    assert.match((await providerError(pending)).message, /closed/);
    assert.match((await providerError(opened.text.embed(["after close"]))).message, /closed/);
  });
});

describe("openai chat", () => {
  it("sends images as data: URL image_url parts", async () => {
    const chat = open().chat;
    assert.ok(chat?.supportsImages);
    const answer = await chat.complete(
      [
        { role: "system", content: "You describe photos." },
        {
          role: "user",
          content: [
            { type: "text", text: "What is in this photo?" },
            { type: "image", mediaType: "image/png", data: PNG },
          ],
        },
      ],
      { maxTokens: 50 },
    );
    assert.match(answer, /red bicycle/);

    const [request] = server.requestsTo("/chat/completions");
    const body = request?.body as { model: string; max_tokens: number; messages: { content: unknown }[] };
    assert.equal(body.model, "gpt-4o-mini");
    assert.equal(body.max_tokens, 50);
    assert.equal(body.messages[0]?.content, "You describe photos.");
    assert.deepEqual(body.messages[1]?.content, [
      { type: "text", text: "What is in this photo?" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${Buffer.from(PNG).toString("base64")}` } },
    ]);
  });

  it("completeJson asks for strict json_schema output and returns the parsed value", async () => {
    server.replyNext("/chat/completions", { fixture: "chat-completion-json" });
    const result = await openChat().completeJson([{ role: "user", content: "Extract facts." }], factsSpec);
    assert.deepEqual(result, { facts: ["Alice adopted a beagle named Biscuit in March"], confidence: 0.82 });

    const body = server.requestsTo("/chat/completions")[0]?.body as { response_format: unknown };
    assert.deepEqual(body.response_format, {
      type: "json_schema",
      json_schema: { name: "facts", schema: factsSpec.jsonSchema, strict: true },
    });
  });

  it("completeJson rejects invalid JSON with the raw text in body", async () => {
    server.replyNext("/chat/completions", { fixture: "chat-completion-invalid-json" });
    const error = await providerError(openChat().completeJson([{ role: "user", content: "x" }], factsSpec));
    assert.match(error.message, /structured output facts is not valid JSON/);
    assert.ok(error.body?.startsWith("Sure! Here are the facts:"));
  });

  it("completeJson rejects output that fails the schema, with the raw text in body", async () => {
    server.replyNext("/chat/completions", { fixture: "chat-completion-json-mismatch" });
    const error = await providerError(openChat().completeJson([{ role: "user", content: "x" }], factsSpec));
    assert.match(error.message, /structured output facts failed validation: facts: Expected array/);
    assert.deepEqual(JSON.parse(error.body ?? ""), { facts: "Alice adopted a beagle", confidence: "high" });
  });

  it("turns a refusal into an error rather than an empty answer", async () => {
    server.replyNext("/chat/completions", { fixture: "chat-completion-refusal" });
    const error = await providerError(openChat().complete([{ role: "user", content: "Who is this?" }]));
    assert.match(error.message, /model refused: I'm sorry/);
  });

  it("surfaces a 400 from the chat endpoint with its body", async () => {
    server.failNext("/chat/completions", "bad-request");
    const error = await providerError(openChat().complete([{ role: "user", content: "hi" }]));
    assert.equal(error.model, "gpt-4o-mini");
    assert.match(error.message, /\/chat\/completions answered HTTP 400/);
    assert.match(error.body ?? "", /invalid_request_error/);
  });
});

describe("openai capabilities", () => {
  it("declares only what was configured", () => {
    const textOnly = open({ chatModel: undefined });
    assert.equal(textOnly.profile, "openai");
    assert.ok(!("chat" in textOnly));
    assert.ok(!("image" in textOnly));
    assert.deepEqual(textOnly.imageReaders, []);
    assert.equal(textOnly.text.id, "text-embedding-3-small");
    assert.equal(textOnly.text.provider, "openai");
    assert.equal(textOnly.text.dimensions, 8);

    assert.deepEqual(open({ imageReader: false }).imageReaders, []);
    assert.deepEqual(open({ imageReader: true, chatModel: undefined }).imageReaders, []);
  });

  it("captions images with the chat model when imageReader is on", async () => {
    const [reader] = open({ imageReader: true }).imageReaders;
    assert.equal(reader?.produces, "caption");
    assert.equal(reader?.id, "gpt-4o-mini");
    const caption = await reader?.readImage(PNG);
    assert.equal(caption, "A red bicycle leans against a weathered brick wall next to a blue front door.");

    const body = server.requestsTo("/chat/completions")[0]?.body as { messages: { content: { type: string }[] }[] };
    const parts = body.messages[0]?.content ?? [];
    assert.deepEqual(
      parts.map((part) => part.type),
      ["text", "image_url"],
    );
    assert.match(JSON.stringify(parts[1]), /data:image\/png;base64,/);
  });

  it("rejects bytes that are not a known image format before calling the endpoint", async () => {
    const [reader] = open({ imageReader: true }).imageReaders;
    await assert.rejects(reader?.readImage(new Uint8Array([1, 2, 3, 4])) ?? Promise.resolve(), InputError);
    assert.equal(server.requests.length, 0);
  });

  it("embeds images one per request as chat-style messages", async () => {
    server.replyNext("/embeddings", { fixture: "embeddings-image" });
    server.replyNext("/embeddings", { fixture: "embeddings-image" });
    const image = open({ imageModel: "TIGER-Lab/VLM2Vec-Full" }).image;
    assert.equal(image?.dimensions, 8);
    assert.ok(image);
    const vectors = await embedImages(image, [PNG, PNG]);
    assert.equal(vectors?.length, 2);
    for (const vector of vectors ?? []) assert.ok(Math.abs(norm(vector) - 1) < 1e-6);

    const requests = server.requestsTo("/embeddings");
    assert.equal(requests.length, 2);
    const body = requests[0]?.body as { model: string; messages: { role: string; content: unknown[] }[] };
    assert.equal(body.model, "TIGER-Lab/VLM2Vec-Full");
    assert.match(JSON.stringify(body.messages[0]?.content[0]), /"url":"data:image\/png;base64,/);
  });

  it("rejects invalid options with a ConfigError", () => {
    assert.throws(() => open({ textDimensions: 0 }), ConfigError);
    assert.throws(() => open({ baseUrl: "localhost:11434" }), ConfigError);
    assert.throws(() => open({ maxBatchSize: 1.5 }), ConfigError);
    assert.throws(() => open({ textModel: " " }), ConfigError);
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let tries = 0; tries < 100 && !condition(); tries += 1) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.ok(condition(), "condition not reached");
}
