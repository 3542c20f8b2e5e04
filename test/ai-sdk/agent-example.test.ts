import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { countTokens } from "../../src/core/tokens.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { startFakeOpenAIServer } from "../models/fake-openai-server.ts";
import { tempDir } from "../support/fixtures.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const bike = readFileSync(join(root, "examples/images/red-bike.png"));
const bikeHash = createHash("sha256").update(bike).digest("hex");

interface ChatMessage {
  role: string;
  content: string | null | { type: string; text?: string; image_url?: { url: string } }[];
  tool_call_id?: string;
}
interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: { type: string; function: { name: string; parameters: { properties: Record<string, unknown> } } }[];
}

/** The images of a request's user messages, decoded from their data URLs. */
function userImages(request: ChatRequest): Buffer[] {
  return request.messages.flatMap((message) =>
    message.role === "user" && Array.isArray(message.content)
      ? message.content.flatMap((part) =>
          part.type === "image_url" && part.image_url
            ? [Buffer.from(part.image_url.url.replace(/^data:image\/png;base64,/, ""), "base64")]
            : [],
        )
      : [],
  );
}

function toolMessages(request: ChatRequest): ChatMessage[] {
  return request.messages.filter((message) => message.role === "tool");
}

describe("examples/ai-sdk-agent.ts against an OpenAI-compatible chat server", () => {
  it("remembers a note with a photo, finds it again in a new conversation, and sees the photo's original bytes", async (t) => {
    const server = await startFakeOpenAIServer();
    t.after(() => server.close());
    // The recorded model calls cairn_get_image with the photo's hash: the fixture must name this file.
    const recordedCall = JSON.stringify(server.fixture("agent-image-call"));
    assert.ok(recordedCall.includes(bikeHash), "agent-image-call.json names examples/images/red-bike.png's hash");
    for (const fixture of [
      "agent-remember-call",
      "agent-remember-done",
      "agent-search-call",
      "agent-image-call",
      "agent-image-answer",
      "agent-pack-answer",
    ]) {
      server.replyNext("/chat/completions", { fixture });
    }
    const db = join(tempDir(t), "memory");
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "examples/ai-sdk-agent.ts"], {
      cwd: root,
      env: {
        ...process.env,
        OPENAI_BASE_URL: server.url,
        OPENAI_API_KEY: "test-key",
        CAIRN_AGENT_MODEL: "gpt-4.1-mini",
        CAIRN_DB: db,
        CAIRN_PROFILE: "hash",
      },
    });

    const requests = server.requestsTo("/chat/completions").map((request) => request.body as ChatRequest);
    assert.equal(requests.length, 6, stdout);
    const [rememberStep, rememberDone, searchStep, imageStep, answerStep, packStep] = requests as [
      ChatRequest,
      ChatRequest,
      ChatRequest,
      ChatRequest,
      ChatRequest,
      ChatRequest,
    ];
    assert.equal(rememberStep.model, "gpt-4.1-mini");
    assert.deepEqual(
      rememberStep.tools?.map((tool) => tool.function.name),
      ["cairn_remember", "cairn_search", "cairn_get_raw_node", "cairn_get_image"],
    );
    const searchSchema = rememberStep.tools?.find((tool) => tool.function.name === "cairn_search");
    assert.ok(searchSchema?.function.parameters.properties.query, "the search tool's JSON schema names its query");

    // 1. The note went into Cairn: the tool result the model read back is Cairn's write receipt.
    const [receipt] = toolMessages(rememberDone);
    const written = JSON.parse(String(receipt?.content)) as { sessionKey: string; rawNodeId: string };
    assert.match(written.sessionKey, /^remember\/day\/\d{4}-\d{2}-\d{2}\/0001$/);

    // 2. A new conversation (no history of the first): the search result is Cairn's evidence for that note.
    assert.ok(!searchStep.messages.some((message) => JSON.stringify(message.content).includes("54 cm")));
    const [found] = toolMessages(imageStep);
    const pack = JSON.parse(String(found?.content)) as {
      items: { rawNodeId: string; text: string; provenance: { source: string }; images: { hash: string }[] }[];
    };
    assert.equal(pack.items[0]?.rawNodeId, written.rawNodeId);
    assert.match(pack.items[0]?.text ?? "", /54 cm/);
    assert.equal(pack.items[0]?.provenance.source, "ai-sdk:remember");
    assert.equal(pack.items[0]?.images[0]?.hash, bikeHash);

    // The image reached the model as a user image part with the original bytes, not as base64 text in the tool message.
    const imageResult = toolMessages(answerStep).at(-1);
    assert.ok(!String(imageResult?.content).includes(bike.toString("base64").slice(0, 200)));
    assert.match(String(imageResult?.content), /sent in the next user message/);
    const [seen] = userImages(answerStep);
    assert.ok(seen?.equals(bike), "the model saw the photo's original bytes");

    // 3. packToPrompt: the pack's text and the original photo in one user message, within 1000 tokens.
    const [packMessage] = packStep.messages;
    assert.ok(Array.isArray(packMessage?.content));
    const texts = packMessage.content.flatMap((part) => (part.type === "text" ? [part.text ?? ""] : []));
    assert.match(texts.join("\n"), /54 cm/);
    assert.ok(userImages(packStep)[0]?.equals(bike));
    // The question is the caller's own part; the pack's parts are the rest (a 400×300 image costs 255 OpenAI tokens).
    const packTokens = texts.slice(0, -1).reduce((sum, text) => sum + countTokens(text), 0) + 255;
    assert.ok(packTokens <= 1000, `the pack's parts cost ${packTokens}`);
    assert.match(stdout, new RegExp(`packToPrompt: ${packTokens} of 1000 tokens`));
    assert.match(stdout, /assistant: Your new bike has a 54 cm frame/);

    // The memory the example left behind holds the note and the photo, as Cairn's own API reads them.
    const memory = await Memory.open({ path: db, models: createHashModels(), ownsModels: true });
    t.after(() => memory.close());
    const scope = { tenant: "example", user: "ana" };
    const node = await memory.getRawNode(scope, written.rawNodeId);
    assert.equal(node.images[0]?.hash, bikeHash);
    assert.ok(Buffer.from((await memory.getBlob(scope, bikeHash)).data).equals(bike));
  });
});
