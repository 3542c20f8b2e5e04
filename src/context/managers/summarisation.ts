import type { ContextManager, DroppedContent } from "../context-manager.ts";
import { contextItem } from "../working-context.ts";
import { extractiveSummariser, type Summariser } from "./summariser.ts";

export interface SummarisationOptions {
  readonly summariser?: Summariser;
  /** Most tokens the summary may take (4,000), and never more than the allowance. */
  readonly maxSummaryTokens?: number;
}

/** Tokens of the summary message's header and overhead, reserved before the summary text. */
const headerReserve = 40;

/**
 * Summarisation: the managed history is replaced by a textual summary; at the next trigger the previous summary
 * and the newly managed messages are summarised together (recursive), so the cost stays bounded.
 */
export function summarisation(options: SummarisationOptions = {}): ContextManager {
  const summariser = options.summariser ?? extractiveSummariser;
  const maxSummaryTokens = options.maxSummaryTokens ?? 4_000;
  return {
    name: "summarisation",
    role: "manager",
    async manage(request) {
      const previous = request.previous?.summary;
      const ids = request.messages.map((message) => message.id);
      // Build on the previous summary only when it covers a prefix of what is managed now.
      const covered = previous?.covers.every((id, index) => ids[index] === id) ? previous.covers.length : 0;
      const continues = covered > 0;
      const fresh = request.messages.slice(covered);
      const limit = Math.max(0, Math.min(maxSummaryTokens, request.allowance - headerReserve));
      const text = await summariser.summarise(continues ? previous?.text : undefined, fresh, limit);
      const dropped: DroppedContent[] = request.messages.map((message) => ({
        messageId: message.id,
        what: "message",
        imageIds: message.images.map((image) => image.id),
      }));
      const first = ids[0] ?? "";
      const last = ids[ids.length - 1] ?? "";
      const items =
        text.length === 0 || limit === 0
          ? []
          : [
              contextItem(
                {
                  role: "user",
                  content: `[summary of earlier history ${first}–${last} (${summariser.name})]\n${text}`,
                },
                { form: "summary", sources: ids },
                request.imageRule,
              ),
            ];
      return {
        items,
        dropped,
        warnings: items.length === 0 ? ["summarisation: no room for a summary within the budget"] : [],
        state: { summary: { text, covers: ids } },
      };
    },
  };
}
