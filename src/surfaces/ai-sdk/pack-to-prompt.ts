import type { ImagePart, TextPart } from "ai";
import { defaultImageTokenRule, type ImageTokenRule, imageTokens } from "../../context/image-tokens.ts";
import { InputError } from "../../core/errors.ts";
import type { Scope } from "../../core/scope.ts";
import { countTokens } from "../../core/tokens.ts";
import type { EvidenceImage, EvidenceItem, EvidencePack } from "../../evidence/evidence-pack.ts";
import { thumbnailSize } from "../../ingest/image-intake.ts";
import type { Memory } from "../../memory.ts";

export interface PackToPromptOptions {
  /** Most tokens the parts may cost together: their text (o200k) plus their images (by `imageTokens`). */
  readonly tokenBudget: number;
  /** How the receiving model charges an image; OpenAI's tiles by default (see `ImageTokenRule`). */
  readonly imageTokens?: ImageTokenRule;
  /**
   * `original` (default): each image's original bytes, or its 256 px thumbnail when the original no
   * longer fits; `thumbnail`: thumbnails only; `none`: images as their description only.
   */
  readonly images?: "original" | "thumbnail" | "none";
}

/** What a piece of the pack was left out for: it did not fit in what was left of the budget. */
export interface DroppedEvidence {
  readonly rawNodeId: string;
  /** The image's hash when an image was dropped (its item's text is in); absent when the whole item was. */
  readonly hash?: string;
  /** What it would have cost. */
  readonly tokens: number;
}

export interface PackPrompt {
  /** Text parts and image parts for a user message, best evidence first; each item's images follow its text. */
  readonly content: (TextPart | ImagePart)[];
  /** Tokens of the parts (the message's own few overhead tokens are not counted). */
  readonly tokens: { readonly text: number; readonly images: number; readonly total: number };
  readonly dropped: readonly DroppedEvidence[];
  /** One line for each item or image left out, and for each image sent as a thumbnail instead. */
  readonly warnings: readonly string[];
}

const header = "Evidence from long-term memory: original turns with their provenance, best first.";
const noEvidence = "Long-term memory holds no evidence for this query.";

/**
 * Puts an evidence pack into a prompt as AI SDK content parts (text with provenance; images with
 * their original bytes) that together cost at most `tokenBudget` tokens, counted as Cairn's
 * context manager counts them (o200k text, image tokens by rule). Items go in rank order; an item
 * whose text does not fit is left out whole, and a later, shorter one may still fit; an image that
 * does not fit falls back to its thumbnail, else is left out (its hash stays in the text, for
 * `cairn_get_image`). Everything left out is reported in `dropped` and `warnings`.
 *
 * @example
 * const pack = await memory.search(scope, "Ana's bike");
 * const { content } = await packToPrompt(memory, scope, pack, { tokenBudget: 3_000 });
 * await generateText({ model, messages: [{ role: "user", content: [...content, { type: "text", text: question }] }] });
 */
export async function packToPrompt(
  memory: Pick<Memory, "getBlob">,
  scope: Scope,
  pack: EvidencePack,
  options: PackToPromptOptions,
): Promise<PackPrompt> {
  const budget = options.tokenBudget;
  if (!Number.isInteger(budget) || budget < 0) {
    throw new InputError("tokenBudget", `must be a whole number of tokens, 0 or more, got ${budget}`);
  }
  const rule = options.imageTokens ?? defaultImageTokenRule;
  const mode = options.images ?? "original";
  const content: (TextPart | ImagePart)[] = [];
  const dropped: DroppedEvidence[] = [];
  const warnings: string[] = [];
  let text = 0;
  let images = 0;
  const left = () => budget - text - images;

  const opening = pack.items.length === 0 ? noEvidence : header;
  const openingTokens = countTokens(opening);
  if (openingTokens > budget) {
    for (const item of pack.items) dropped.push({ rawNodeId: item.rawNodeId, tokens: itemTokens(item) });
    warnings.push(`token budget ${budget} is below the opening line's ${openingTokens} tokens: nothing was included`);
    return { content, tokens: { text: 0, images: 0, total: 0 }, dropped, warnings };
  }
  content.push({ type: "text", text: opening });
  text += openingTokens;

  for (const [index, item] of pack.items.entries()) {
    const words = describeItem(index + 1, item);
    const wordsTokens = countTokens(words);
    if (wordsTokens > left()) {
      dropped.push({ rawNodeId: item.rawNodeId, tokens: wordsTokens });
      warnings.push(`left out raw node ${item.rawNodeId} (${wordsTokens} text tokens; ${left()} left)`);
      continue;
    }
    content.push({ type: "text", text: words });
    text += wordsTokens;
    if (mode === "none") continue;
    for (const image of item.images) {
      const original = imageTokens({ width: image.width, height: image.height }, rule);
      const thumbnail = imageTokens(thumbnailDimensions(image), rule);
      const choice =
        mode === "original" && original <= left()
          ? { thumbnail: false, tokens: original }
          : thumbnail <= left()
            ? { thumbnail: true, tokens: thumbnail }
            : null;
      if (!choice) {
        const wanted = mode === "original" ? original : thumbnail;
        dropped.push({ rawNodeId: item.rawNodeId, hash: image.hash, tokens: wanted });
        warnings.push(`left out image ${image.hash} of raw node ${item.rawNodeId} (${wanted} tokens; ${left()} left)`);
        continue;
      }
      if (choice.thumbnail && mode === "original") {
        warnings.push(
          `image ${image.hash} of raw node ${item.rawNodeId} sent as its thumbnail (${choice.tokens} tokens; the original costs ${original}, ${left()} left)`,
        );
      }
      const blob = await memory.getBlob(scope, image.hash, { thumbnail: choice.thumbnail });
      content.push({ type: "image", image: blob.data, mediaType: blob.mediaType });
      images += choice.tokens;
    }
  }
  return { content, tokens: { text, images, total: text + images }, dropped, warnings };
}

/** One item as the model reads it: where it comes from, its words, and its images by hash. */
function describeItem(rank: number, item: EvidenceItem): string {
  const { provenance } = item;
  const who = [provenance.speaker, provenance.role && `(${provenance.role})`].filter(Boolean).join(" ");
  const head = [
    `[${rank}] ${provenance.time}`,
    who,
    `session ${provenance.sessionKey} turn ${provenance.turn}`,
    `raw node ${item.rawNodeId}`,
  ];
  const lines = [head.filter(Boolean).join(" · ")];
  if (item.text) lines.push(item.text);
  for (const image of item.images) {
    const words = [image.caption, image.derivedText && `text in image: ${image.derivedText}`].filter(Boolean);
    lines.push(
      `image ${image.hash}: ${image.mediaType} ${image.width}×${image.height}${words.length > 0 ? `, ${words.join("; ")}` : ""}`,
    );
  }
  for (const image of item.imagesAsText) {
    const words = [image.caption, image.derivedText && `text in image: ${image.derivedText}`].filter(Boolean);
    lines.push(`image (as text): ${words.join("; ") || "no caption"}`);
  }
  return lines.join("\n");
}

function itemTokens(item: EvidenceItem): number {
  return countTokens(describeItem(1, item));
}

/**
 * The thumbnail's size, as intake makes it (fit inside 256 px, never enlarged), rounded up: the
 * cost is never under what the model charges.
 */
function thumbnailDimensions(image: EvidenceImage): { width: number; height: number } {
  const scale = Math.min(1, thumbnailSize / Math.max(image.width, image.height));
  return { width: Math.ceil(image.width * scale), height: Math.ceil(image.height * scale) };
}
