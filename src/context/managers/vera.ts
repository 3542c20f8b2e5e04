import { countTokens } from "../../core/tokens.ts";
import type { ContextManager, DroppedContent, ManageRequest } from "../context-manager.ts";
import { imageTokens } from "../image-tokens.ts";
import { historyBlocks, layOutPages } from "../render/page-layout.ts";
import type { RasterImage } from "../render/rasterise.ts";
import { messageLabel } from "../trajectory.ts";
import { type ContentPart, type CostedImage, contextItem, dataUrl } from "../working-context.ts";
import {
  chooseNewestPages,
  defaultMaxPages,
  droppedByPages,
  headerText,
  renderedHeaderTokens,
} from "./rendered-history.ts";

export interface VeraOptions {
  /** Most rendered pages per call (10); native images do not count against it. */
  readonly maxPages?: number;
  /** Share of the allowance native images, tables and charts may take before pages are chosen (0.5). */
  readonly nativeShare?: number;
}

interface Visual {
  readonly id: string;
  readonly messageId: string;
  readonly label: string;
  /** Index, in the whole layout, of the page holding the visual's placeholder. */
  readonly pageIndex: number;
  readonly image: RasterImage & { readonly mediaType: string };
  readonly tokens: number;
}

/**
 * VERA: text history rendered as Visual Rendering does, while images, screenshots, crops, tables and charts stay
 * visual. Native visuals are chosen first (newest first, within `nativeShare` of the allowance), then the newest
 * pages (at most `maxPages`) in what is left; everything is placed chronologically, each visual right after the
 * page that holds its interaction (or where that page would be, when the page itself no longer fits).
 */
export function vera(options: VeraOptions = {}): ContextManager {
  const maxPages = options.maxPages ?? defaultMaxPages;
  const nativeShare = options.nativeShare ?? 0.5;
  return {
    name: "vera",
    role: "manager",
    async manage(request) {
      const visuals = await visualsOf(request);
      let room = Math.floor(Math.max(0, request.allowance - renderedHeaderTokens) * nativeShare);
      const kept = new Set<string>();
      let visualCost = 0;
      for (const visual of [...visuals].reverse()) {
        if (visual.tokens > room) continue;
        kept.add(visual.id);
        room -= visual.tokens;
        visualCost += visual.tokens;
      }
      const chosen = chooseNewestPages(request, "beside", maxPages, request.allowance - visualCost);
      const firstKept = chosen.all.length - chosen.pages.length;
      const dropped: DroppedContent[] = droppedByPages(request, chosen.pages);
      const droppedWhole = new Set(dropped.filter((entry) => entry.what === "message").map((entry) => entry.messageId));
      for (const message of request.messages) {
        const lost = [
          ...message.images.map((image) => image.id),
          ...message.artifacts.map((artifact) => `${message.id}#${artifact.id}`),
        ].filter((id) => !kept.has(id));
        if (lost.length > 0 && !droppedWhole.has(message.id))
          dropped.push({ messageId: message.id, what: "images", imageIds: lost });
      }
      if (chosen.pages.length === 0 && kept.size === 0) {
        return { items: [], dropped, warnings: ["vera: no room for a rendered page or an image within the budget"] };
      }
      const extra = kept.size > 0 ? "; images, tables and charts follow the page of their message" : "";
      const parts: ContentPart[] = [
        { type: "text", text: headerText(request, chosen.pages.length, chosen.total, extra) },
      ];
      const images: CostedImage[] = [];
      for (const [pageIndex, page] of chosen.all.entries()) {
        if (pageIndex >= firstKept) {
          const drawn = await request.renderer.page(page, request.render);
          parts.push({ type: "image_url", image_url: { url: dataUrl(drawn.png, "image/png"), detail: "high" } });
          images.push({ width: drawn.width, height: drawn.height, detail: "high" });
        }
        for (const visual of visuals) {
          if (visual.pageIndex !== pageIndex || !kept.has(visual.id)) continue;
          parts.push({ type: "text", text: visual.label });
          parts.push({
            type: "image_url",
            image_url: { url: dataUrl(visual.image.png, visual.image.mediaType), detail: "high" },
          });
          images.push({ width: visual.image.width, height: visual.image.height, detail: "high" });
        }
      }
      const sources = new Set(chosen.pages.flatMap((page) => page.messageIds));
      for (const visual of visuals) if (kept.has(visual.id)) sources.add(visual.messageId);
      const item = contextItem(
        { role: "user", content: parts },
        { form: "rendered", sources: [...sources], nativeImages: [...kept], images },
        request.imageRule,
      );
      return { items: [item], dropped, warnings: [] };
    },
  };
}

/** Every image and artifact of the managed history with its cost, label and the page its placeholder lands on. */
async function visualsOf(request: ManageRequest): Promise<Visual[]> {
  const pages = layOutPages(historyBlocks(request.messages, { visuals: "beside" }), request.render);
  const pageOf = new Map<string, number>();
  for (const [index, page] of pages.entries()) for (const anchor of page.anchoredVisuals) pageOf.set(anchor, index);
  const visuals: Visual[] = [];
  for (const message of request.messages) {
    const entries: { id: string; kind: string; raster: () => Promise<Visual["image"]> }[] = [
      ...message.images.map((image) => ({
        id: image.id,
        kind: image.kind as string,
        raster: async () => ({ png: image.data, width: image.width, height: image.height, mediaType: image.mediaType }),
      })),
      ...message.artifacts.map((artifact) => ({
        id: `${message.id}#${artifact.id}`,
        kind: artifact.kind as string,
        raster: async () => ({
          ...(await request.renderer.artifact(artifact, request.render)),
          mediaType: "image/png",
        }),
      })),
    ];
    for (const entry of entries) {
      const image = await entry.raster();
      const label = `[${entry.kind} ${entry.id} from ${messageLabel(message)}]`;
      const tokens =
        imageTokens({ width: image.width, height: image.height, detail: "high" }, request.imageRule) +
        countTokens(label);
      visuals.push({
        id: entry.id,
        messageId: message.id,
        label,
        pageIndex: pageOf.get(entry.id) ?? pages.length - 1,
        image,
        tokens,
      });
    }
  }
  return visuals;
}
