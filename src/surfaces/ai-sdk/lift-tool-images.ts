import type { ImagePart, ModelMessage, TextPart, ToolModelMessage } from "ai";

type ToolResultOutput = Extract<ToolModelMessage["content"][number], { type: "tool-result" }>["output"];
type ContentEntry = Extract<ToolResultOutput, { type: "content" }>["value"][number];

/**
 * Moves the images of tool results into a user message that follows the tool messages, leaving a
 * note in their place. Chat Completions endpoints (OpenAI's, and the OpenAI-compatible servers:
 * vLLM, Ollama, llama.cpp) accept only text in a tool message, so the AI SDK would otherwise send
 * an image's base64 to the model as text. Returns new messages; the input is not changed. Use it
 * as `prepareStep`: the agent's own history keeps the images where the tools put them.
 *
 * @example
 * await generateText({ model, tools, prepareStep: ({ messages }) => ({ messages: liftToolImages(messages) }), prompt });
 */
export function liftToolImages(messages: readonly ModelMessage[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  let lifted: ImagePart[] = [];
  let calls: string[] = [];
  const flush = () => {
    if (lifted.length === 0) return;
    const intro: TextPart = {
      type: "text",
      text: `The ${lifted.length === 1 ? "image" : `${lifted.length} images`} returned by tool call ${calls.join(", ")}:`,
    };
    out.push({ role: "user", content: [intro, ...lifted] });
    lifted = [];
    calls = [];
  };
  for (const message of messages) {
    if (message.role !== "tool") {
      flush();
      out.push(message);
      continue;
    }
    const content = message.content.map((part) => {
      if (part.type !== "tool-result" || part.output.type !== "content") return part;
      const value = part.output.value.map((entry) => {
        const image = asImagePart(entry);
        if (!image) return entry;
        lifted.push(image);
        if (!calls.includes(part.toolCallId)) calls.push(part.toolCallId);
        return { type: "text" as const, text: `[image ${lifted.length}: sent in the next user message]` };
      });
      return { ...part, output: { ...part.output, value } };
    });
    out.push({ ...message, content });
  }
  flush();
  return out;
}

function asImagePart(entry: ContentEntry): ImagePart | null {
  switch (entry.type) {
    case "image-data":
      return { type: "image", image: entry.data, mediaType: entry.mediaType };
    case "media":
    case "file-data":
      return entry.mediaType.startsWith("image/")
        ? { type: "image", image: entry.data, mediaType: entry.mediaType }
        : null;
    case "image-url":
      return { type: "image", image: new URL(entry.url) };
    default:
      return null;
  }
}
