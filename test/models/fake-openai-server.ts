/**
 * An in-process OpenAI-compatible server for provider tests. It answers over a real socket with responses
 * recorded in `test/fixtures/openai/*.json`, records every request, and can be scripted to misbehave.
 */
import { createHash } from "node:crypto";
import { once } from "node:events";
import { readdir, readFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach } from "node:test";
import { createOpenAIModels } from "../../src/models/openai-provider.ts";
import type { ChatModel, Models } from "../../src/models/provider.ts";

export type FakeRoute = "/embeddings" | "/chat/completions";

export interface RecordedRequest {
  readonly method: string;
  /** Path below the `/v1` root, e.g. `/embeddings`. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The parsed JSON body (the provider always sends JSON). */
  readonly body: unknown;
}

/** One scripted answer. `fixture` names a file in `test/fixtures/openai/` without `.json`; `body` is sent raw. */
export interface FakeReply {
  status?: number;
  fixture?: string;
  body?: string;
  headers?: Record<string, string>;
  /** Hold the answer back, to exercise client timeouts. */
  delayMs?: number;
}

export type FakeFailure = "server-error" | "bad-request" | "malformed-json" | "wrong-dimensions";

export interface FakeOpenAIServer {
  /** Base URL including `/v1`, ready for `baseUrl`. */
  readonly url: string;
  /** Every request received, in arrival order. */
  readonly requests: RecordedRequest[];
  requestsTo(route: FakeRoute): RecordedRequest[];
  /** Answer the next request on `route` with `reply` (replies queue up in order). */
  replyNext(route: FakeRoute, reply: FakeReply): void;
  /** Answer the next request on `route` with a canned failure; later requests get the default answer again. */
  failNext(route: FakeRoute, failure: FakeFailure): void;
  /** Parsed content of a fixture, for computing expected values in tests. */
  fixture(name: string): unknown;
  close(): Promise<void>;
}

const FIXTURES = new URL("../fixtures/openai/", import.meta.url);

const FAILURES: Record<FakeFailure, FakeReply> = {
  "server-error": { status: 500, fixture: "error-500" },
  "bad-request": { status: 400, fixture: "error-400" },
  // A body cut off mid-stream, as a proxy dropping the connection would leave it.
  "malformed-json": {
    status: 200,
    body: '{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.01,',
  },
  "wrong-dimensions": { fixture: "embeddings-wrong-dimensions" },
};

export interface FakeOpenAIServerOptions {
  /**
   * What an unscripted embeddings request gets: `recorded` cycles the recorded vectors by position in the
   * request (the default); `by-content` derives each vector from its input, so the same text or image always
   * gets the same vector whatever batch it travels in, and order across batches can be checked.
   */
  readonly embeddings?: "recorded" | "by-content";
}

/** Starts the server on 127.0.0.1 on a free port. */
export async function startFakeOpenAIServer(options: FakeOpenAIServerOptions = {}): Promise<FakeOpenAIServer> {
  const fixtures = await loadFixtures();
  const requests: RecordedRequest[] = [];
  const queues = new Map<FakeRoute, FakeReply[]>([
    ["/embeddings", []],
    ["/chat/completions", []],
  ]);
  const timers = new Set<NodeJS.Timeout>();

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      response.writeHead(500, { "content-type": "text/plain" }).end(`fake server failed: ${String(error)}`);
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? "").replace(/^\/v1/, "");
    const text = await readBody(request);
    requests.push({ method: request.method ?? "", path, headers: request.headers, body: parseJson(text) });
    const queue = queues.get(path as FakeRoute);
    if (!queue || request.method !== "POST") return send(response, notFound(path), fixtures);
    const reply = queue.shift() ?? defaultReply(path as FakeRoute, text, { fixtures, embeddings: options.embeddings });
    if (!reply.delayMs) return send(response, reply, fixtures);
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!response.destroyed) send(response, reply, fixtures);
    }, reply.delayMs);
    timers.add(timer);
  }

  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    requestsTo: (route) => requests.filter((request) => request.path === route),
    replyNext: (route, reply) => queues.get(route)?.push(reply),
    failNext: (route, failure) => queues.get(route)?.push(FAILURES[failure]),
    fixture: (name) => JSON.parse(fixtureText(fixtures, name)),
    async close() {
      for (const timer of timers) clearTimeout(timer);
      // Clients may still hold keep-alive or delayed connections; close() alone would wait for them.
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}

async function loadFixtures(): Promise<Map<string, string>> {
  const names = (await readdir(FIXTURES)).filter((name) => name.endsWith(".json"));
  const entries = await Promise.all(
    names.map(async (name) => [name.slice(0, -".json".length), await readFile(new URL(name, FIXTURES), "utf8")]),
  );
  return new Map(entries as [string, string][]);
}

function fixtureText(fixtures: Map<string, string>, name: string): string {
  const text = fixtures.get(name);
  if (text === undefined) throw new Error(`no fixture test/fixtures/openai/${name}.json`);
  return text;
}

/**
 * Without a script, chat answers with the recorded caption and embeddings with the recorded vectors, one per input
 * (cycling through the recording), so batches of any size get a well-formed answer.
 */
function defaultReply(
  route: FakeRoute,
  requestText: string,
  settings: { fixtures: Map<string, string>; embeddings: FakeOpenAIServerOptions["embeddings"] },
): FakeReply {
  if (route === "/chat/completions") return { fixture: "chat-completion" };
  const recorded = JSON.parse(fixtureText(settings.fixtures, "embeddings")) as { data: { embedding: number[] }[] };
  const request = parseJson(requestText) as { input?: unknown[]; messages?: unknown } | undefined;
  // An image request (chat-style `messages`) embeds as one input.
  const inputs = request?.input ?? [request?.messages];
  const width = recorded.data[0]?.embedding.length ?? 8;
  const data = inputs.map((input, index) => ({
    object: "embedding",
    index,
    embedding:
      settings.embeddings === "by-content"
        ? contentVector(input, width)
        : recorded.data[index % recorded.data.length]?.embedding,
  }));
  return { body: JSON.stringify({ ...recorded, data }) };
}

/** A vector of `width` components read from the SHA-256 of the input: the same input, the same vector. */
function contentVector(input: unknown, width: number): number[] {
  const digest = createHash("sha256").update(JSON.stringify(input)).digest();
  return Array.from({ length: width }, (_, index) => ((digest[index % digest.length] ?? 0) - 127.5) / 128);
}

function notFound(path: string): FakeReply {
  const error = {
    message: `Unknown request URL: POST /v1${path}.`,
    type: "invalid_request_error",
    code: "unknown_url",
  };
  return { status: 404, body: JSON.stringify({ error }) };
}

function send(response: ServerResponse, reply: FakeReply, fixtures: Map<string, string>): void {
  const body = reply.body ?? (reply.fixture ? fixtureText(fixtures, reply.fixture) : "");
  response.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers }).end(body);
}

async function readBody(request: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of request) parts.push(part as Buffer);
  return Buffer.concat(parts).toString("utf8");
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // Recorded as-is so a test can still see what a malformed request looked like.
    return text;
  }
}

/**
 * For a test file whose tests each talk to a chat model: a fresh fake server before each test, the
 * `openai` provider's chat model on it when asked for, and both closed after the test.
 *
 * @example
 * const fake = fakeChatEachTest();
 * it("…", async () => { fake.server.replyNext("/chat/completions", …); await fake.openChat().complete(…); });
 */
export function fakeChatEachTest(): { readonly server: FakeOpenAIServer; openChat(): ChatModel } {
  let server: FakeOpenAIServer | undefined;
  let models: Models | undefined;
  beforeEach(async () => {
    server = await startFakeOpenAIServer();
  });
  afterEach(async () => {
    await models?.close();
    models = undefined;
    await server?.close();
  });
  const running = (): FakeOpenAIServer => {
    if (!server) throw new Error("the fake server runs only inside a test");
    return server;
  };
  return {
    get server() {
      return running();
    },
    openChat() {
      models = createOpenAIModels({
        baseUrl: running().url,
        textModel: "text-embedding-3-small",
        textDimensions: 8,
        chatModel: "gpt-4o-mini",
        maxRetries: 0,
      });
      if (!models.chat) throw new Error("chat model configured");
      return models.chat;
    },
  };
}
