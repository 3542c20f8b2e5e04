import { countTokens } from "../../core/tokens.ts";
import type { DroppedContent, ManageRequest } from "../context-manager.ts";
import { imageTokens } from "../image-tokens.ts";
import { type BlockOptions, historyBlocks, type LaidPage, layOutPages } from "../render/page-layout.ts";

/** VERA's setting: at most 10 rendered images per model call. */
export const defaultMaxPages = 10;

export interface ChosenPages {
  /** Every page of the managed history, oldest first. */
  readonly all: readonly LaidPage[];
  /** The kept (newest) pages, oldest first. */
  readonly pages: readonly LaidPage[];
  readonly total: number;
  readonly pageTokens: number;
  readonly width: number;
  readonly height: number;
}

/** Tokens the header text part of a rendered-history message costs, with room for its ids. */
export const renderedHeaderTokens = 48;

/**
 * Lays out the managed history chronologically and keeps its newest pages: at most `maxPages`, and only as
 * many as `allowance` pays for (older pages are the ones dropped, the bounded window VERA describes).
 */
export function chooseNewestPages(
  request: ManageRequest,
  visuals: BlockOptions["visuals"],
  maxPages: number,
  allowance: number,
): ChosenPages {
  const pages = layOutPages(historyBlocks(request.messages, { visuals }), request.render);
  const width = Math.max(1, Math.round(request.render.pageWidth * request.render.scale));
  const height = Math.max(1, Math.round(request.render.pageHeight * request.render.scale));
  const pageTokens = imageTokens({ width, height, detail: "high" }, request.imageRule);
  const affordable = Math.max(0, Math.floor((allowance - renderedHeaderTokens) / pageTokens));
  const keep = Math.min(maxPages, affordable, pages.length);
  return { all: pages, pages: pages.slice(pages.length - keep), total: pages.length, pageTokens, width, height };
}

/** Messages with no line on a kept page are dropped whole; those cut by the window's first page, in part. */
export function droppedByPages(request: ManageRequest, kept: readonly LaidPage[]): DroppedContent[] {
  const onKept = new Set(kept.flatMap((page) => page.messageIds));
  const firstKept = kept[0]?.messageIds[0];
  const dropped: DroppedContent[] = [];
  for (const message of request.messages) {
    const imageIds = message.images.map((image) => image.id);
    if (!onKept.has(message.id)) dropped.push({ messageId: message.id, what: "message", imageIds });
    else if (message.id === firstKept && !startsOnPage(message.id, kept[0])) {
      dropped.push({ messageId: message.id, what: "partial", imageIds: [] });
    }
  }
  return dropped;
}

/** Whether the message's label line (its first line) is on the page. */
function startsOnPage(messageId: string, page: LaidPage | undefined): boolean {
  if (page === undefined) return false;
  // Line 0 is the page header; a message whose first line here is its label starts on this page.
  const first = page.lines.slice(1).find((line) => line.text !== "");
  return (first?.style === "label" || (first?.labelChars ?? 0) > 0) && page.messageIds[0] === messageId;
}

export function headerText(request: ManageRequest, pages: number, total: number, extra: string): string {
  const ids = request.messages.map((message) => message.id);
  const range = `${ids[0] ?? ""}–${ids[ids.length - 1] ?? ""}`;
  const shown = pages < total ? `the newest ${pages} of ${total} pages` : `${pages} pages`;
  return `[earlier history ${range} rendered as ${shown}, oldest first; each message starts with its [role · name · time] label${extra}]`;
}

export function headerCost(text: string): number {
  return countTokens(text);
}
