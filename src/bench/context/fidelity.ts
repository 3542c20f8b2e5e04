import { imageTokens } from "../../context/image-tokens.ts";
import { defaultRenderSettings, historyBlocks, layOutPages } from "../../context/render/page-layout.ts";
import { Renderer } from "../../context/render/renderer.ts";
import type { TrajectoryMessage } from "../../context/trajectory.ts";
import { countTokens } from "../../core/tokens.ts";
import type { ImageReader } from "../../models/provider.ts";

export const fidelityScales = [0.5, 0.6, 0.75, 0.9, 1] as const;

export interface FidelityRow {
  readonly scale: number;
  readonly pages: number;
  /** Words of the pages' text (lower-cased letters and digits) that OCR reads back, counted with multiplicity. */
  readonly wordRecall: number;
  readonly pageWidth: number;
  readonly pageHeight: number;
  /** Tokens of one page image under each rule. */
  readonly imageTokens: { readonly openaiTile: number; readonly patch: number; readonly area: number };
  /** o200k tokens of the text one page carries, on average. */
  readonly textTokensPerPage: number;
}

const wordsOf = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/**
 * VERA's Appendix C shape without an LLM: the same history rendered at several scales, each page read back by OCR,
 * word recall beside what a page costs in image tokens and carries in text tokens.
 */
export async function measureFidelity(
  messages: readonly TrajectoryMessage[],
  ocr: ImageReader,
  options: { readonly pages: number; readonly scales?: readonly number[] },
): Promise<FidelityRow[]> {
  const rows: FidelityRow[] = [];
  const renderer = new Renderer();
  for (const scale of options.scales ?? fidelityScales) {
    const settings = { ...defaultRenderSettings, scale };
    // The newest pages: pages fill from the newest line back, so these are full (the oldest may be partly empty).
    const pages = layOutPages(historyBlocks(messages, { visuals: "as-text" }), settings).slice(-options.pages);
    let wanted = 0;
    let found = 0;
    let textTokens = 0;
    let width = 0;
    let height = 0;
    for (const page of pages) {
      const text = page.lines.map((line) => line.text).join("\n");
      textTokens += countTokens(text);
      const drawn = await renderer.page(page, settings);
      width = drawn.width;
      height = drawn.height;
      const read = new Map<string, number>();
      for (const word of wordsOf(await ocr.readImage(drawn.png))) read.set(word, (read.get(word) ?? 0) + 1);
      for (const word of wordsOf(text)) {
        wanted++;
        const left = read.get(word) ?? 0;
        if (left > 0) {
          found++;
          read.set(word, left - 1);
        }
      }
    }
    const size = { width, height, detail: "high" as const };
    rows.push({
      scale,
      pages: pages.length,
      wordRecall: wanted === 0 ? 0 : found / wanted,
      pageWidth: width,
      pageHeight: height,
      imageTokens: {
        openaiTile: imageTokens(size, { kind: "openai-tile" }),
        patch: imageTokens(size, { kind: "patch" }),
        area: imageTokens(size, { kind: "area" }),
      },
      textTokensPerPage: Math.round(textTokens / Math.max(1, pages.length)),
    });
  }
  return rows;
}
