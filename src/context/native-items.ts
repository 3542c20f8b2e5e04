import type { ImageTokenRule } from "./image-tokens.ts";
import type { RenderSettings } from "./render/page-layout.ts";
import type { Renderer } from "./render/renderer.ts";
import { type TrajectoryMessage, tableText } from "./trajectory.ts";
import {
  apiName,
  type ContentPart,
  type ContextItem,
  type CostedImage,
  contextItem,
  dataUrl,
} from "./working-context.ts";

export interface NativeContext {
  readonly imageRule: ImageTokenRule;
  readonly render: RenderSettings;
  readonly renderer: Renderer;
}

/**
 * A history message in its original form. Tables travel as text, charts as their drawn image, images as
 * image parts. Chat APIs take images only from users, so an assistant's or a tool's images follow it in a
 * user message that says whose they are.
 */
export async function nativeItems(message: TrajectoryMessage, context: NativeContext): Promise<ContextItem[]> {
  const textParts: string[] = [];
  if (message.text) textParts.push(message.text);
  for (const artifact of message.artifacts) if (artifact.kind === "table") textParts.push(tableText(artifact));
  const text = textParts.join("\n\n");
  const visualParts: ContentPart[] = [];
  const images: CostedImage[] = [];
  const visualIds: string[] = [];
  for (const image of message.images) {
    visualParts.push({ type: "image_url", image_url: { url: dataUrl(image.data, image.mediaType), detail: "high" } });
    images.push({ width: image.width, height: image.height, detail: "high" });
    visualIds.push(image.id);
  }
  for (const artifact of message.artifacts) {
    if (artifact.kind !== "chart") continue;
    const drawn = await context.renderer.artifact(artifact, context.render);
    visualParts.push({ type: "image_url", image_url: { url: dataUrl(drawn.png, "image/png"), detail: "high" } });
    images.push({ width: drawn.width, height: drawn.height, detail: "high" });
    visualIds.push(`${message.id}#${artifact.id}`);
  }
  const name = apiName(message.name);
  const sources = [message.id];
  if (message.role === "user" || message.role === "system") {
    const content: string | ContentPart[] =
      visualParts.length === 0 || message.role === "system"
        ? text
        : [...(text ? [{ type: "text" as const, text }] : []), ...visualParts];
    const main = contextItem(
      { role: message.role, content, ...(name ? { name } : {}) },
      message.role === "system"
        ? { form: "native", sources }
        : { form: "native", sources, nativeImages: visualIds, images },
      context.imageRule,
    );
    if (message.role === "user" || visualParts.length === 0) return [main];
    return [main, attachedVisuals(message, visualParts, visualIds, images, context.imageRule)];
  }
  const main = contextItem(
    message.role === "assistant"
      ? {
          role: "assistant",
          content: text,
          ...(name ? { name } : {}),
          ...(message.toolCalls.length > 0
            ? {
                tool_calls: message.toolCalls.map((call) => ({
                  id: call.id,
                  type: "function" as const,
                  function: { name: call.name, arguments: call.arguments },
                })),
              }
            : {}),
        }
      : { role: "tool", content: text, tool_call_id: message.toolCallId ?? "" },
    { form: "native", sources },
    context.imageRule,
  );
  if (visualParts.length === 0) return [main];
  return [main, attachedVisuals(message, visualParts, visualIds, images, context.imageRule)];
}

function attachedVisuals(
  message: TrajectoryMessage,
  parts: readonly ContentPart[],
  ids: readonly string[],
  images: readonly CostedImage[],
  rule: ImageTokenRule,
): ContextItem {
  const owner =
    message.role === "tool" ? `the tool result of call ${message.toolCallId ?? "?"}` : `the ${message.role}'s message`;
  return contextItem(
    { role: "user", content: [{ type: "text", text: `[images from ${owner} ${message.id}]` }, ...parts] },
    { form: "native", sources: [message.id], nativeImages: ids, images },
    rule,
  );
}
