/**
 * An AI SDK agent with Cairn as its long-term memory, against any OpenAI-compatible chat endpoint.
 *
 * 1. A first conversation: the agent files a note with a photo (`cairn_remember`).
 * 2. A second, separate conversation: the agent finds the note (`cairn_search`) and looks at the
 *    photo's original pixels (`cairn_get_image`); only Cairn connects the two conversations.
 * 3. Without tools: an evidence pack goes straight into the prompt (`packToPrompt`) within a token budget.
 *
 * Run (the model must call tools and see images):
 *   OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-… CAIRN_AGENT_MODEL=gpt-4.1-mini \
 *     npx tsx examples/ai-sdk-agent.ts
 * Optional: CAIRN_DB (the memory's folder; a fresh temporary one by default), CAIRN_PROFILE (Cairn's
 * own models: local by default, hash for a quick try without them).
 *
 * In your own project import from the package instead: `cairnTools`, `liftToolImages` and
 * `packToPrompt` from its `/ai-sdk` entry point, `Memory` and `createModels` from its main one.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, type LanguageModel, stepCountIs } from "ai";
import { createModels, Memory, type Scope } from "../src/index.ts";
import { cairnTools, liftToolImages, packToPrompt } from "../src/surfaces/ai-sdk/index.ts";

const imageFolder = fileURLToPath(new URL("./images/", import.meta.url));
const system =
  "You are a personal assistant with a long-term memory. Store what the user asks you to remember with " +
  "cairn_remember; before answering about the past, look it up with cairn_search, and look at images you need.";

/** The three parts above; `log` receives one line per event. Returns the answers in order. */
export async function runExample(
  memory: Memory,
  scope: Scope,
  model: LanguageModel,
  log: (line: string) => void = console.log,
): Promise<string[]> {
  const tools = cairnTools(memory, scope, { imageFolder });
  const agent = async (prompt: string) => {
    log(`user: ${prompt}`);
    const result = await generateText({
      model,
      system,
      tools,
      prompt,
      stopWhen: stepCountIs(6),
      // Chat Completions carries no images in tool results: send them as a user message instead.
      prepareStep: ({ messages }) => ({ messages: liftToolImages(messages) }),
      onStepFinish: ({ toolCalls, toolResults }) => {
        for (const call of toolCalls) log(`  tool call ${call.toolName} ${JSON.stringify(call.input)}`);
        for (const result of toolResults) log(`  tool result ${result.toolName}: ${summarise(result.output)}`);
      },
    });
    log(`assistant: ${result.text}`);
    return result.text;
  };

  const answers = [
    await agent("Please remember this: my new bike is the red one in the photo red-bike.png. Its frame is 54 cm."),
    await agent("What frame size is my new bike, and what colour is it? Check the photo."),
  ];

  const question = "What colour is my bike?";
  const pack = await memory.search(scope, "bike");
  const prompt = await packToPrompt(memory, scope, pack, { tokenBudget: 1_000 });
  log(
    `packToPrompt: ${prompt.tokens.total} of 1000 tokens (text ${prompt.tokens.text}, images ${prompt.tokens.images}), ` +
      `${prompt.content.filter((part) => part.type === "image").length} image(s), ${prompt.dropped.length} left out`,
  );
  for (const warning of prompt.warnings) log(`  warning: ${warning}`);
  const direct = await generateText({
    model,
    messages: [{ role: "user", content: [...prompt.content, { type: "text", text: question }] }],
  });
  log(`user: ${question}\nassistant: ${direct.text}`);
  return [...answers, direct.text];
}

function summarise(output: unknown): string {
  const text = JSON.stringify(output);
  return text.length > 160 ? `${text.slice(0, 160)}… (${text.length} characters)` : text;
}

async function main(): Promise<void> {
  const baseURL = process.env.OPENAI_BASE_URL;
  const modelName = process.env.CAIRN_AGENT_MODEL;
  if (!baseURL || !modelName) {
    console.error("set OPENAI_BASE_URL (an OpenAI-compatible endpoint) and CAIRN_AGENT_MODEL (a chat model name)");
    process.exit(2);
  }
  const provider = createOpenAICompatible({ name: "openai", baseURL, apiKey: process.env.OPENAI_API_KEY });
  const path = process.env.CAIRN_DB ?? mkdtempSync(join(tmpdir(), "cairn-ai-sdk-"));
  const models = await createModels(process.env.CAIRN_PROFILE ?? "local");
  const memory = await Memory.open({ path, models, ownsModels: true });
  console.log(`memory: ${path}`);
  try {
    await runExample(memory, { tenant: "example", user: "ana" }, provider(modelName));
  } finally {
    await memory.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
