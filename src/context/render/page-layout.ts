import type { TrajectoryMessage, TrajectoryRole } from "../trajectory.ts";
import { artifactText, messageLabel, toolCallText } from "../trajectory.ts";

/**
 * Page geometry at scale 1, in pixels; a page is drawn at `scale` (0.75 by default, VERA's main setting).
 * 16 px DejaVu Sans Mono at 0.75× is 12 px, which tesseract reads back with word recall 1.0 on this
 * machine (0.53 at 0.5×): see BENCHMARKS.md "Context fidelity".
 */
export interface RenderSettings {
  readonly scale: number;
  readonly pageWidth: number;
  readonly pageHeight: number;
  readonly fontSize: number;
  readonly lineHeight: number;
  readonly margin: number;
}

export const defaultRenderSettings: RenderSettings = Object.freeze({
  scale: 0.75,
  pageWidth: 1000,
  pageHeight: 1400,
  fontSize: 16,
  lineHeight: 20,
  margin: 24,
});

/** DejaVu Sans Mono's advance width, in ems (1233/2048): every character is this wide. */
export const monoAdvance = 1233 / 2048;

export type LineStyle = "label" | "body" | "note";

export interface LaidLine {
  readonly text: string;
  readonly style: LineStyle;
  readonly role: TrajectoryRole | "page";
  /** The line opens a message: its first `labelChars` characters are the message's label, drawn as one. */
  readonly labelChars?: number;
}

export interface LaidPage {
  readonly lines: readonly LaidLine[];
  /** Messages with at least one line on this page, in order. */
  readonly messageIds: readonly string[];
  /** Images and artifacts whose placeholder is on this page (VERA shows them natively right after it). */
  readonly anchoredVisuals: readonly string[];
}

/** How a rendered history treats what is visual. */
export interface BlockOptions {
  /** Visual Rendering: images become their captions, artifacts their text. VERA: placeholders, kept native. */
  readonly visuals: "as-text" | "beside";
}

interface Block {
  readonly messageId: string;
  readonly role: TrajectoryRole;
  readonly lines: readonly {
    readonly text: string;
    readonly style: LineStyle;
    readonly anchor?: string;
    readonly labelChars?: number;
  }[];
}

/** One block per message: its label (role, name, time: provenance) opening its first line, then its content. */
export function historyBlocks(messages: readonly TrajectoryMessage[], options: BlockOptions): Block[] {
  return messages.map((message) => {
    const label = `[${messageLabel(message)}]`;
    const lines: { text: string; style: LineStyle; anchor?: string; labelChars?: number }[] = [
      message.text
        ? { text: `${label} ${message.text}`, style: "body", labelChars: label.length }
        : { text: label, style: "label" },
    ];
    for (const call of message.toolCalls)
      lines.push({ text: `→ tool call ${call.id}: ${toolCallText(call)}`, style: "body" });
    for (const artifact of message.artifacts) {
      if (options.visuals === "as-text") lines.push({ text: artifactText(artifact), style: "body" });
      else {
        const id = `${message.id}#${artifact.id}`;
        const title = artifact.title ? `: ${artifact.title}` : "";
        lines.push({
          text: `[${artifact.kind} ${id}${title} — shown as an image after this page]`,
          style: "note",
          anchor: id,
        });
      }
    }
    for (const image of message.images) {
      const caption = image.caption ? `: ${image.caption}` : "";
      if (options.visuals === "as-text") lines.push({ text: `[${image.kind} ${image.id}${caption}]`, style: "note" });
      else
        lines.push({
          text: `[${image.kind} ${image.id}${caption} — shown after this page]`,
          style: "note",
          anchor: image.id,
        });
    }
    return { messageId: message.id, role: message.role, lines };
  });
}

export function columnsOf(settings: RenderSettings): number {
  return Math.max(20, Math.floor((settings.pageWidth - 2 * settings.margin) / (settings.fontSize * monoAdvance)));
}

export function linesPerPage(settings: RenderSettings): number {
  return Math.max(4, Math.floor((settings.pageHeight - 2 * settings.margin) / settings.lineHeight));
}

/**
 * Lays blocks out chronologically into pages: text wraps at word boundaries (long words are cut), leading
 * spaces and table rows are kept, each message starts on a new line with its label, each page starts with its number.
 */
export function layOutPages(blocks: readonly Block[], settings: RenderSettings = defaultRenderSettings): LaidPage[] {
  const columns = columnsOf(settings);
  const perPage = linesPerPage(settings) - 1; // the first line of every page is its header
  const rows: { line: LaidLine; messageId: string; anchor?: string }[] = [];
  for (const block of blocks) {
    for (const part of block.lines) {
      const wrapped = wrapText(part.text, columns);
      wrapped.forEach((text, index) => {
        const anchor = index === wrapped.length - 1 ? part.anchor : undefined;
        const labelChars = index === 0 && part.labelChars ? Math.min(part.labelChars, text.length) : 0;
        rows.push({
          line: { text, style: part.style, role: block.role, ...(labelChars > 0 ? { labelChars } : {}) },
          messageId: block.messageId,
          ...(anchor ? { anchor } : {}),
        });
      });
    }
  }
  const pages: LaidPage[] = [];
  for (let start = 0; start < rows.length; start += perPage) {
    const slice = rows.slice(start, start + perPage);
    // A page never starts with the blank line between two messages.
    const messageIds = [
      ...new Set(slice.filter((row) => row.line.text !== "" || row.line.style !== "body").map((row) => row.messageId)),
    ];
    pages.push({
      lines: slice.map((row) => row.line),
      messageIds,
      anchoredVisuals: slice.flatMap((row) => (row.anchor ? [row.anchor] : [])),
    });
  }
  const total = pages.length;
  return pages.map((page, index) => ({
    ...page,
    lines: [{ text: `— history page ${index + 1} of ${total} —`, style: "note", role: "page" }, ...page.lines],
  }));
}

/** Display columns of a character: East Asian wide and full-width forms take two. */
function charColumns(codePoint: number): number {
  return (codePoint >= 0x1100 && codePoint <= 0x115f) ||
    (codePoint >= 0x2e80 && codePoint <= 0xa4cf) ||
    (codePoint >= 0xac00 && codePoint <= 0xd7a3) ||
    (codePoint >= 0xf900 && codePoint <= 0xfaff) ||
    (codePoint >= 0xff00 && codePoint <= 0xff60) ||
    (codePoint >= 0x1f300 && codePoint <= 0x1faff)
    ? 2
    : 1;
}

function widthOf(text: string): number {
  let width = 0;
  for (const char of text) width += charColumns(char.codePointAt(0) ?? 0);
  return width;
}

/** Wraps one paragraph-bearing text to `columns`: words stay whole unless longer than a line. */
export function wrapText(text: string, columns: number): string[] {
  const out: string[] = [];
  for (const raw of text.replace(/\r\n?/g, "\n").replace(/\t/g, "    ").split("\n")) {
    // Control characters other than newline cannot be drawn; drop them.
    const paragraph = raw.replace(/\p{Cc}/gu, "");
    if (widthOf(paragraph) <= columns) {
      out.push(paragraph);
      continue;
    }
    const indent = /^ */.exec(paragraph)?.[0] ?? "";
    let line = "";
    for (const word of paragraph.slice(indent.length).split(/ +/)) {
      const candidate = line === "" ? indent + word : `${line} ${word}`;
      if (widthOf(candidate) <= columns) {
        line = candidate;
        continue;
      }
      if (line !== "") out.push(line);
      line = indent + word;
      while (widthOf(line) > columns) {
        let cut = "";
        for (const char of line) {
          if (widthOf(cut + char) > columns) break;
          cut += char;
        }
        out.push(cut);
        line = line.slice(cut.length);
      }
    }
    out.push(line);
  }
  return out;
}
