import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Scope } from "../../core/scope.ts";
import type { EvidenceImage, EvidenceItem, EvidencePack } from "../../evidence/evidence-pack.ts";
import type { Memory } from "../../memory.ts";
import type { ImageRef, RawNode } from "../../store/records.ts";

export type ContentBlock = CallToolResult["content"][number];

/**
 * How images travel back to the client: `link` as resource links (to the original and its
 * thumbnail, read on request), `thumbnail` or `original` as image content, `none` not at all.
 */
export type ImageMode = "link" | "original" | "thumbnail" | "none";

export function rawNodeUri(id: string): string {
  return `cairn://raw-nodes/${encodeURIComponent(id)}`;
}

export function blobUri(hash: string): string {
  return `cairn://blobs/${hash}`;
}

/** The 256 px WebP thumbnail of an original image, by the original's hash. */
export function thumbnailUri(hash: string): string {
  return `cairn://thumbnails/${hash}`;
}

/**
 * The default search answer for a host model: one text block per item (its words and provenance
 * first), each image as a resource link to its original (the description says where its thumbnail
 * is), so a search costs a few kilobytes and the pixels are read only when wanted.
 */
export function compactEvidenceContent(pack: EvidencePack): ContentBlock[] {
  const content: ContentBlock[] = [{ type: "text", text: packSummary(pack) }];
  for (const [index, item] of pack.items.entries()) {
    content.push({ type: "text", text: compactItem(index + 1, item) });
    for (const image of item.images) content.push(imageLink(image));
  }
  return content;
}

function compactItem(rank: number, item: EvidenceItem): string {
  const { provenance } = item;
  const who = [provenance.speaker, provenance.role && `(${provenance.role})`].filter(Boolean).join(" ");
  const head = [
    `[${rank}] ${provenance.time.replace(/:00\.000Z$|\.000Z$/, "Z")}`,
    who,
    `session ${provenance.sessionKey} turn ${provenance.turn}`,
    `id ${item.rawNodeId}`,
  ];
  const lines = [head.filter(Boolean).join(" · ")];
  if (item.text) lines.push(item.text);
  for (const image of item.images) {
    const words = [image.caption, image.derivedText && `text in image: ${image.derivedText}`].filter(Boolean);
    lines.push(`image: ${words.join("; ") || "no caption"} (linked)`);
  }
  for (const image of item.imagesAsText) {
    const words = [image.caption, image.derivedText && `text in image: ${image.derivedText}`].filter(Boolean);
    lines.push(`image (as text): ${words.join("; ") || "no caption"}`);
  }
  if (item.imagesCut > 0) lines.push(`${item.imagesCut} more image(s) left out by the image budget`);
  return lines.join("\n");
}

function imageLink(image: EvidenceImage): ContentBlock {
  return {
    type: "resource_link",
    uri: blobUri(image.hash),
    name: image.caption ?? `image ${image.hash.slice(0, 12)}`,
    mimeType: image.mediaType,
    description: `${image.width}×${image.height}, ${Math.ceil(image.bytes / 1024)} KiB`,
  };
}

/**
 * The evidence as the calling model reads it: per raw node a text block with its provenance,
 * followed by its original images as image content, so each image sits next to the turn it belongs to.
 */
export async function evidenceContent(
  memory: Memory,
  scope: Scope,
  pack: EvidencePack,
  images: ImageMode,
): Promise<ContentBlock[]> {
  const content: ContentBlock[] = [{ type: "text", text: packSummary(pack) }];
  for (const [index, item] of pack.items.entries()) {
    content.push({ type: "text", text: describeItem(index + 1, item) });
    for (const image of item.images) {
      const block = await imageBlock(memory, scope, image.hash, images);
      if (block) content.push(block);
    }
  }
  return content;
}

/** A raw node as text (JSON with its provenance), followed by its images. */
export async function rawNodeContent(
  memory: Memory,
  scope: Scope,
  node: RawNode,
  images: ImageMode,
): Promise<ContentBlock[]> {
  const content: ContentBlock[] = [{ type: "text", text: JSON.stringify(node, null, 2) }];
  for (const image of node.images) {
    if (!image.hash) continue;
    const block = await imageBlock(memory, scope, image.hash, images);
    if (block) content.push(block);
  }
  return content;
}

async function imageBlock(memory: Memory, scope: Scope, hash: string, mode: ImageMode): Promise<ContentBlock | null> {
  if (mode === "none") return null;
  if (mode === "link") {
    return {
      type: "resource_link",
      uri: blobUri(hash),
      name: `image ${hash.slice(0, 12)}`,
      description: `thumbnail ${thumbnailUri(hash)}`,
    };
  }
  const blob = await memory.getBlob(scope, hash, { thumbnail: mode === "thumbnail" });
  return { type: "image", data: Buffer.from(blob.data).toString("base64"), mimeType: blob.mediaType };
}

function packSummary(pack: EvidencePack): string {
  const lines = [
    pack.items.length === 0
      ? "No evidence found."
      : `${pack.items.length} evidence item(s), best first; each is an original turn with its provenance.`,
    `Budget used: ${Object.entries(pack.budget.used)
      .map(
        ([dimension, used]) =>
          `${dimension} ${used}/${pack.budget.limits[dimension as keyof typeof pack.budget.limits]}`,
      )
      .join(", ")}.`,
  ];
  for (const warning of pack.warnings) lines.push(`Warning: ${warning}`);
  return lines.join("\n");
}

function describeItem(rank: number, item: EvidenceItem): string {
  const { provenance } = item;
  const who = [provenance.speaker, provenance.role && `(${provenance.role})`].filter(Boolean).join(" ");
  const lines = [
    `[${rank}] raw node ${item.rawNodeId} (${rawNodeUri(item.rawNodeId)})`,
    `session ${provenance.sessionKey} (id ${provenance.sessionId}), turn ${provenance.turn}, ${provenance.time}${who ? `, ${who}` : ""}${provenance.source ? `, source ${provenance.source}` : ""}${provenance.uri ? `, uri ${provenance.uri}` : ""}`,
  ];
  if (item.text) lines.push(item.text);
  for (const [index, image] of item.images.entries()) {
    lines.push(`image ${index + 1}: ${describeImage(image)}, ${blobUri(image.hash)} (attached below)`);
  }
  for (const image of item.imagesAsText) {
    const words = [image.caption, image.derivedText && `text in image: ${image.derivedText}`].filter(Boolean);
    lines.push(`image (as text): ${words.join("; ") || "no caption"}${image.origin ? `, from ${image.origin}` : ""}`);
  }
  if (item.imagesCut > 0) lines.push(`${item.imagesCut} more image(s) left out by the image budget`);
  return lines.join("\n");
}

function describeImage(image: Pick<ImageRef, "mediaType" | "width" | "height" | "caption" | "derivedText">): string {
  const parts = [`${image.mediaType} ${image.width}×${image.height}`];
  if (image.caption) parts.push(`caption: ${image.caption}`);
  if (image.derivedText) parts.push(`text in image: ${image.derivedText}`);
  return parts.join(", ");
}
