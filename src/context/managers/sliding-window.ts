import type { ContextManager, DroppedContent } from "../context-manager.ts";
import { nativeItems } from "../native-items.ts";
import type { TrajectoryMessage } from "../trajectory.ts";
import { type ContextItem, contextItem, costOf } from "../working-context.ts";

export interface SlidingWindowOptions {
  /** Share of the trigger the kept window may fill, so the context does not re-trigger at once (0.5). */
  readonly retainShare?: number;
}

/**
 * Sliding Window: older tool responses are evicted first (the call stays, its result becomes a pointer), then
 * the oldest messages, until the managed history fits `retainShare × trigger` and the allowance.
 */
export function slidingWindow(options: SlidingWindowOptions = {}): ContextManager {
  const retainShare = options.retainShare ?? 0.5;
  return {
    name: "sliding-window",
    role: "manager",
    async manage(request) {
      const cap = Math.min(request.allowance, Math.floor(request.budget.trigger * retainShare));
      const dropped: DroppedContent[] = [];
      const perMessage: ContextItem[][] = [];
      for (const message of request.messages) {
        if (message.role === "tool") {
          perMessage.push([evictedToolResult(message, request)]);
          dropped.push({
            messageId: message.id,
            what: "tool-result",
            imageIds: message.images.map((image) => image.id),
          });
        } else perMessage.push(await nativeItems(message, request));
      }
      // Keep the newest messages that fit; never start on a tool result whose call was cut.
      let start = 0;
      let total = costOf(perMessage.flat()).total;
      while (start < perMessage.length && total > cap) {
        total -= costOf(perMessage[start] ?? []).total;
        start++;
      }
      while (start < request.messages.length && request.messages[start]?.role === "tool") {
        total -= costOf(perMessage[start] ?? []).total;
        start++;
      }
      const cut = new Set(request.messages.slice(0, start).map((message) => message.id));
      const kept = dropped.filter((entry) => !cut.has(entry.messageId));
      for (const message of request.messages.slice(0, start)) {
        kept.push({ messageId: message.id, what: "message", imageIds: message.images.map((image) => image.id) });
      }
      return { items: perMessage.slice(start).flat(), dropped: kept, warnings: [] };
    },
  };
}

function evictedToolResult(
  message: TrajectoryMessage,
  request: { imageRule: import("../image-tokens.ts").ImageTokenRule },
): ContextItem {
  return contextItem(
    {
      role: "tool",
      content: `[tool result ${message.id} evicted to memory${message.name ? ` (${message.name})` : ""}]`,
      tool_call_id: message.toolCallId ?? "",
    },
    { form: "pointer", sources: [message.id] },
    request.imageRule,
  );
}
