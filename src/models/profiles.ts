import { ConfigError } from "../core/errors.ts";
import { createHashModels } from "./hash-provider.ts";
import type { ChatModel, Models } from "./provider.ts";

export type ProfileName = "hash" | "local" | "openai";

/**
 * A chat model on the configured OpenAI-compatible endpoint, named by an environment variable
 * (e.g. `CAIRN_OPENAI_CHAT_MODEL` for answers, `CAIRN_OPENAI_JUDGE_MODEL` for judging).
 */
export async function createEndpointChat(
  variable: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ readonly chat: ChatModel; close(): Promise<void> }> {
  const baseUrl = env.CAIRN_OPENAI_BASE_URL ?? env.OPENAI_BASE_URL;
  const model = env[variable];
  if (!baseUrl || !model) throw new ConfigError(`this needs CAIRN_OPENAI_BASE_URL and ${variable}`);
  const { createOpenAIChat } = await import("./openai-provider.ts");
  return createOpenAIChat({ baseUrl, apiKey: env.CAIRN_OPENAI_API_KEY ?? env.OPENAI_API_KEY, model });
}

/**
 * Builds a profile's models for surfaces that take a name (CLI, service). The SDK takes a
 * `Models` object directly. Heavy profiles are imported only when asked for.
 */
export async function createModels(profile: string, env: NodeJS.ProcessEnv = process.env): Promise<Models> {
  if (profile === "hash") return createHashModels();
  if (profile === "local") {
    const { createLocalModels } = await import("./local-provider.ts");
    const workers = env.CAIRN_LOCAL_TEXT_WORKERS;
    if (workers === undefined || workers === "") return createLocalModels();
    if (!/^\d+$/.test(workers)) {
      throw new ConfigError(
        `CAIRN_LOCAL_TEXT_WORKERS must be a whole number of threads (got ${JSON.stringify(workers)})`,
      );
    }
    return createLocalModels({ textWorkers: Number(workers) });
  }
  if (profile === "openai") {
    const { createOpenAIModels } = await import("./openai-provider.ts");
    const baseUrl = env.CAIRN_OPENAI_BASE_URL ?? env.OPENAI_BASE_URL;
    const textModel = env.CAIRN_OPENAI_EMBEDDING_MODEL;
    const dimensions = Number(env.CAIRN_OPENAI_EMBEDDING_DIMENSIONS);
    if (!baseUrl || !textModel || !Number.isInteger(dimensions) || dimensions <= 0) {
      throw new ConfigError(
        "the openai profile needs CAIRN_OPENAI_BASE_URL, CAIRN_OPENAI_EMBEDDING_MODEL and CAIRN_OPENAI_EMBEDDING_DIMENSIONS",
      );
    }
    return createOpenAIModels({
      baseUrl,
      apiKey: env.CAIRN_OPENAI_API_KEY ?? env.OPENAI_API_KEY,
      textModel,
      textDimensions: dimensions,
      chatModel: env.CAIRN_OPENAI_CHAT_MODEL,
      imageReader: Boolean(env.CAIRN_OPENAI_CHAT_MODEL),
    });
  }
  throw new ConfigError(`unknown model profile ${profile} (hash, local, openai)`);
}
