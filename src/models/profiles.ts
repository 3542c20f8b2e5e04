import { ConfigError } from "../errors.ts";
import { createHashModels } from "./hash-provider.ts";
import type { Models } from "./provider.ts";

export type ProfileName = "hash" | "local" | "openai";

/**
 * Builds a profile's models for surfaces that take a name (CLI, service). The SDK takes a
 * `Models` object directly. Heavy profiles are imported only when asked for.
 */
export async function createModels(profile: string, env: NodeJS.ProcessEnv = process.env): Promise<Models> {
  if (profile === "hash") return createHashModels();
  if (profile === "local") {
    const { createLocalModels } = await import("./local-provider.ts");
    return createLocalModels();
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
