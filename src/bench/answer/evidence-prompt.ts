import type { ChatMessage, ChatPart } from "../../models/provider.ts";
import type { RawNode } from "../../store/records.ts";

/** What the reader says when the evidence does not hold the answer; the judge prompt knows it too. */
export const NOT_MENTIONED = "not mentioned";

export interface PromptImage {
  readonly data: Uint8Array;
  readonly mediaType: string;
}

export interface EvidencePromptInput {
  readonly question: string;
  /** The pack, best first. */
  readonly nodes: readonly RawNode[];
  /** Pixels to show, by blob hash; images of the pack not in here are described by their text only. */
  readonly images: ReadonlyMap<string, PromptImage>;
  /** The question's own image; null when it has none. */
  readonly queryImage: PromptImage | null;
  /** False for a reader without vision: no image parts at all, even for a query image. */
  readonly vision: boolean;
}

const SYSTEM_PROMPT = [
  "You answer questions about a person's long-term conversation history, using only the evidence turns given.",
  "Each turn shows when it was said, who said it, what was said, and the images shared with it: their captions,",
  "any text read from them, and, when shown, the image itself.",
  "Resolve relative dates ('yesterday', 'last week') against the time of the turn that uses them.",
  "Answer with a short phrase, a few words or at most one sentence, and nothing else.",
  `If the evidence does not contain the answer, reply exactly: ${NOT_MENTIONED}`,
].join(" ");

/**
 * Which blobs to show as pixels: the first `maxImages` distinct images of the pack, in pack order.
 * Pure; the caller loads the bytes.
 */
export function imagesToShow(nodes: readonly RawNode[], maxImages: number): string[] {
  const hashes = new Set<string>();
  for (const node of nodes) {
    for (const image of node.images) {
      if (hashes.size >= maxImages) return [...hashes];
      if (image.hash !== null) hashes.add(image.hash);
    }
  }
  return [...hashes];
}

/**
 * The reader's messages: a system prompt with the rules, then one user message holding the evidence turns
 * (each followed by the images it shared) and the question last, where long-context readers attend best.
 * Pure: the same input gives the same messages.
 */
export function buildEvidencePrompt(input: EvidencePromptInput): ChatMessage[] {
  const parts: ChatPart[] = [];
  const text = (value: string) => {
    const last = parts.at(-1);
    // Adjacent text is merged so a reader without vision gets one plain string.
    if (last?.type === "text") parts[parts.length - 1] = { type: "text", text: `${last.text}\n${value}` };
    else parts.push({ type: "text", text: value });
  };
  const shown = new Map<string, number>();

  text(input.nodes.length === 0 ? "Evidence: none was found." : "Evidence (most relevant first):");
  input.nodes.forEach((node, index) => {
    text(
      `[${index + 1}] ${formatTime(node.time)} · ${node.speaker ?? node.role ?? "unknown speaker"}: ${turnText(node)}`,
    );
    for (const image of node.images) {
      const pixels = input.vision && image.hash !== null ? input.images.get(image.hash) : undefined;
      const earlier = image.hash === null ? undefined : shown.get(image.hash);
      if (pixels && earlier === undefined && image.hash !== null) {
        const number = shown.size + 1;
        shown.set(image.hash, number);
        text(`    image ${number}, shown next${describeImage(image)}`);
        parts.push({ type: "image", mediaType: pixels.mediaType, data: pixels.data });
      } else if (earlier !== undefined && input.vision) {
        text(`    image ${earlier} again${describeImage(image)}`);
      } else {
        text(`    image (not shown)${describeImage(image) || ": no description"}`);
      }
    }
  });

  text("");
  if (input.queryImage && input.vision) {
    text("The question refers to this image:");
    parts.push({ type: "image", mediaType: input.queryImage.mediaType, data: input.queryImage.data });
  } else if (input.queryImage) {
    text("The question refers to an image that cannot be shown to you.");
  }
  text(`Question: ${input.question}\nShort answer:`);

  const onlyText = parts.every((part) => part.type === "text");
  const content = onlyText ? parts.map((part) => (part.type === "text" ? part.text : "")).join("\n") : parts;
  return [
    { role: "system", content: SYSTEM_PROMPT },
    { role: "user", content },
  ];
}

/** Text of every text part, for token estimates when the provider reports no usage. */
export function promptText(messages: readonly ChatMessage[]): string {
  return messages
    .flatMap((message) =>
      typeof message.content === "string"
        ? [message.content]
        : message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])),
    )
    .join("\n");
}

/** Counts the image parts, which token estimates leave out. */
export function imageParts(messages: readonly ChatMessage[]): number {
  return messages.reduce(
    (count, message) =>
      typeof message.content === "string"
        ? count
        : count + message.content.filter((part) => part.type === "image").length,
    0,
  );
}

function turnText(node: RawNode): string {
  const text = node.text.trim();
  if (text !== "") return text.replace(/\s*\n\s*/g, " ");
  return node.images.length > 0 ? "(shares an image)" : "(no text)";
}

function describeImage(image: RawNode["images"][number]): string {
  const described = [
    image.caption?.trim() ? `caption: ${oneLine(image.caption)}` : null,
    image.derivedText?.trim() ? `text in the image: ${oneLine(image.derivedText)}` : null,
  ].filter((part): part is string => part !== null);
  return described.length === 0 ? "" : `; ${described.join("; ")}`;
}

function oneLine(value: string): string {
  return JSON.stringify(value.trim().replace(/\s+/g, " "));
}

const weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/** `Wed 2024-05-01 10:00 UTC`: the weekday helps with "last Friday", the date with "when did…". */
function formatTime(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const [day, clock] = date.toISOString().split("T") as [string, string];
  return `${weekdays[date.getUTCDay()]} ${day} ${clock.slice(0, 5)} UTC`;
}
