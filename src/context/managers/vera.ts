import { countTokens } from "../../core/tokens.ts";
import type { ContextManager, DroppedContent } from "../context-manager.ts";
import { imageTokens } from "../image-tokens.ts";
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
  /** Most tokens the native images and artifacts may take, as a share of the trigger (0.25). */
  readonly nativeShare?: number;
}

interface Visual {
  readonly id: string;
  readonly label: string;
  readonly pageIndex: number;
  readonly image: RasterImage & { readonly mediaType: string };
  readonly tokens: number;
}

/**
 * VERA: text history rendered as Visual Rendering does, while images, screenshots, crops, tables and charts
 * stay visual, each placed right after the page that holds its interaction. Pages are chosen first (newest,
 * at most `maxPages`); then visuals on kept pages, newest first, within `nativeShare × trigger`.
 */
export function vera(options: VeraOptions = {}): ContextManager {
  const maxPages = options.maxPages ?? defaultMaxPages;
  const nativeShare = options.nativeShare ?? 0.25;
  return {
    name: "vera",
    role: "manager",
    async manage(request) {
      const chosen = chooseNewestPages(request, "beside", maxPages, request.allowance);
      const dropped: DroppedContent[] = droppedByPages(request, chosen.pages);
      const byId = new Map(request.messages.map((message) => [message.id, message]));
      const visuals: Visual[] = [];
      for (const [pageIndex, page] of chosen.pages.entries()) {
        for (const anchor of page.anchoredVisuals) {
          const [messageId = ""] = anchor.split("#");
          const message = byId.get(messageId);
          if (message === undefined) continue;
          const image = message.images.find((candidate) => candidate.id === anchor);
          const artifact = message.artifacts.find((candidate) => `${message.id}#${candidate.id}` === anchor);
          let raster: Visual["image"] | undefined;
          if (image !== undefined)
            raster = { png: image.data, width: image.width, height: image.height, mediaType: image.mediaType };
          else if (artifact !== undefined)
            raster = { ...(await request.renderer.artifact(artifact, request.render)), mediaType: "image/png" };
          if (raster === undefined) continue;
          const kind = image?.kind ?? artifact?.kind ?? "image";
          const label = `[${kind} ${anchor} from ${messageLabel(message)}]`;
          const tokens =
            imageTokens({ width: raster.width, height: raster.height, detail: "high" }, request.imageRule) +
            countTokens(label);
          visuals.push({ id: anchor, label, pageIndex, image: raster, tokens });
        }
      }
      const pageCost = renderedHeaderTokens + chosen.pages.length * chosen.pageTokens;
      let room = Math.min(Math.floor(request.budget.trigger * nativeShare), request.allowance - pageCost);
      const kept = new Set<string>();
      for (const visual of [...visuals].reverse()) {
        if (visual.tokens > room) continue;
        kept.add(visual.id);
        room -= visual.tokens;
      }
      const droppedWhole = new Set(dropped.filter((entry) => entry.what === "message").map((entry) => entry.messageId));
      for (const message of request.messages) {
        if (droppedWhole.has(message.id)) continue;
        const lost = [
          ...message.images.map((image) => image.id),
          ...message.artifacts.map((artifact) => `${message.id}#${artifact.id}`),
        ].filter((id) => !kept.has(id));
        if (lost.length > 0) dropped.push({ messageId: message.id, what: "images", imageIds: lost });
      }
      if (chosen.pages.length === 0) {
        return { items: [], dropped, warnings: ["vera: no room for a rendered page within the budget"] };
      }
      const extra = kept.size > 0 ? "; images, tables and charts follow the page of their message" : "";
      const parts: ContentPart[] = [
        { type: "text", text: headerText(request, chosen.pages.length, chosen.total, extra) },
      ];
      const images: CostedImage[] = [];
      for (const [pageIndex, page] of chosen.pages.entries()) {
        const drawn = await request.renderer.page(page, request.render);
        parts.push({ type: "image_url", image_url: { url: dataUrl(drawn.png, "image/png"), detail: "high" } });
        images.push({ width: drawn.width, height: drawn.height, detail: "high" });
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
      const item = contextItem(
        { role: "user", content: parts },
        {
          form: "rendered",
          sources: [...new Set(chosen.pages.flatMap((page) => page.messageIds))],
          nativeImages: [...kept],
          images,
        },
        request.imageRule,
      );
      return { items: [item], dropped, warnings: [] };
    },
  };
}
