import type { ContextManager, DroppedContent } from "../context-manager.ts";
import { type ContentPart, type CostedImage, contextItem, dataUrl } from "../working-context.ts";
import { chooseNewestPages, defaultMaxPages, droppedByPages, headerText } from "./rendered-history.ts";

export interface VisualRenderingOptions {
  /** Most rendered pages per call (10). */
  readonly maxPages?: number;
}

/**
 * Visual Rendering: the managed history, images as their captions and artifacts as text, drawn chronologically
 * onto PNG pages; the newest pages are kept. Pixels of the history's own images are not carried.
 */
export function visualRendering(options: VisualRenderingOptions = {}): ContextManager {
  const maxPages = options.maxPages ?? defaultMaxPages;
  return {
    name: "visual-rendering",
    role: "manager",
    async manage(request) {
      const chosen = chooseNewestPages(request, "as-text", maxPages, request.allowance);
      const dropped: DroppedContent[] = droppedByPages(request, chosen.pages);
      const droppedWhole = new Set(dropped.filter((entry) => entry.what === "message").map((entry) => entry.messageId));
      for (const message of request.messages) {
        if (message.images.length > 0 && !droppedWhole.has(message.id)) {
          dropped.push({ messageId: message.id, what: "images", imageIds: message.images.map((image) => image.id) });
        }
      }
      if (chosen.pages.length === 0) {
        return { items: [], dropped, warnings: ["visual-rendering: no room for a rendered page within the budget"] };
      }
      const parts: ContentPart[] = [{ type: "text", text: headerText(request, chosen.pages.length, chosen.total, "") }];
      const images: CostedImage[] = [];
      for (const page of chosen.pages) {
        const drawn = await request.renderer.page(page, request.render);
        parts.push({ type: "image_url", image_url: { url: dataUrl(drawn.png, "image/png"), detail: "high" } });
        images.push({ width: drawn.width, height: drawn.height, detail: "high" });
      }
      const item = contextItem(
        { role: "user", content: parts },
        { form: "rendered", sources: [...new Set(chosen.pages.flatMap((page) => page.messageIds))], images },
        request.imageRule,
      );
      return { items: [item], dropped, warnings: [] };
    },
  };
}
