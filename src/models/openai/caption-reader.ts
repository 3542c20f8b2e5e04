import { ProviderError } from "../../core/errors.ts";
import type { ChatModel, ChatPart, ImageReader } from "../provider.ts";
import { detectMediaType } from "./image-url-part.ts";
import { openaiProvider } from "./openai-config.ts";

const captionPrompt =
  "Describe this image in one or two plain sentences: the main subjects, what they are doing, the setting, " +
  "and any clearly legible text. Answer with the description only.";

/** Room for the two sentences the prompt asks for, and a cap on a model that rambles on. */
const captionMaxTokens = 120;

/** Captions make image content reachable by the lexical channels when no joint text–image vectors exist. */
export function createCaptionReader(chat: ChatModel): ImageReader {
  return Object.freeze({
    id: chat.id,
    provider: openaiProvider,
    produces: "caption" as const,
    async readImage(image: Uint8Array): Promise<string> {
      const content: ChatPart[] = [
        { type: "text", text: captionPrompt },
        { type: "image", mediaType: detectMediaType(image), data: image },
      ];
      const caption = (await chat.complete([{ role: "user", content }], { maxTokens: captionMaxTokens })).trim();
      if (caption === "") throw new ProviderError(openaiProvider, chat.id, "caption is empty");
      return caption;
    },
  });
}
