import type { TrajectoryMessage, TrajectoryRole } from "../trajectory.ts";
import { artifactText, compactTime, messageLabel, toolCallText } from "../trajectory.ts";

/**
 * Page geometry at scale 1, in pixels; a page is drawn at `scale` (0.75 by default, VERA's main setting).
 * 16 px DejaVu Sans Mono at 0.75× is 12 px, which tesseract reads back with word recall ≈ 0.98 on this
 * machine (≈ 0.3 at 0.5×): see BENCHMARKS.md "Context managers". The default 1024×2048 page is 768×1536 at
 * 0.75×: exactly the 2×3 tiles OpenAI's accounting (the default rule) charges 1,105 tokens for without shrinking
 * it; the earlier 1000×1400 page (750×1050) paid the same 6 tiles for two thirds of the pixels. Under the
 * area-proportional rules the page size does not change text per token.
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
  pageWidth: 1024,
  pageHeight: 2048,
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
  /** The message's time to the minute, when it has one (page headers name the time their first message was sent). */
  readonly time?: string;
  readonly lines: readonly {
    readonly text: string;
    readonly style: LineStyle;
    readonly anchor?: string;
    readonly labelChars?: number;
  }[];
}

/**
 * One block per message: its label (role, name, time: provenance) opening its first line, then its content. The
 * time is written only when it differs from the previous message's (a conversation's turns often share one), and
 * every page header repeats the time of the page's first message, so each line's time stays readable.
 */
export function historyBlocks(messages: readonly TrajectoryMessage[], options: BlockOptions): Block[] {
  let previousTime: string | undefined;
  return messages.map((message) => {
    const time = message.time ? compactTime(message.time) : undefined;
    const label = `[${messageLabel(message, { time: time !== previousTime })}]`;
    previousTime = time;
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
    return { messageId: message.id, role: message.role, ...(time ? { time } : {}), lines };
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
 * spaces and table rows are kept, each message starts on a new line with its label, each page starts with its
 * number and the time of its first message. Pages are filled from the newest line back, so only the oldest page
 * is partly empty: a manager that keeps the newest pages keeps full ones.
 */
export function layOutPages(blocks: readonly Block[], settings: RenderSettings = defaultRenderSettings): LaidPage[] {
  const columns = columnsOf(settings);
  const perPage = linesPerPage(settings) - 1; // the first line of every page is its header
  const rows: { line: LaidLine; messageId: string; time?: string; anchor?: string }[] = [];
  for (const block of blocks) {
    for (const part of block.lines) {
      const wrapped = wrapText(part.text, columns);
      wrapped.forEach((text, index) => {
        const anchor = index === wrapped.length - 1 ? part.anchor : undefined;
        const labelChars = index === 0 && part.labelChars ? Math.min(part.labelChars, text.length) : 0;
        rows.push({
          line: { text, style: part.style, role: block.role, ...(labelChars > 0 ? { labelChars } : {}) },
          messageId: block.messageId,
          ...(block.time ? { time: block.time } : {}),
          ...(anchor ? { anchor } : {}),
        });
      });
    }
  }
  const pages: (LaidPage & { time?: string })[] = [];
  const first = rows.length % perPage;
  const starts = first > 0 ? [0] : [];
  for (let start = first; start < rows.length; start += perPage) starts.push(start);
  for (const [index, start] of starts.entries()) {
    const slice = rows.slice(start, starts[index + 1] ?? rows.length);
    const time = slice[0]?.time;
    pages.push({
      lines: slice.map((row) => row.line),
      // A message whose only line here is a blank one does not count as on the page.
      messageIds: [
        ...new Set(
          slice.filter((row) => row.line.text !== "" || row.line.style !== "body").map((row) => row.messageId),
        ),
      ],
      anchoredVisuals: slice.flatMap((row) => (row.anchor ? [row.anchor] : [])),
      ...(time ? { time } : {}),
    });
  }
  const total = pages.length;
  return pages.map(({ time, ...page }, index) => ({
    ...page,
    lines: [
      { text: `— history page ${index + 1} of ${total}${time ? ` · ${time}` : ""} —`, style: "note", role: "page" },
      ...page.lines,
    ],
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
