import type { Fused } from "../channels/rrf.ts";
import { InvariantError } from "../core/errors.ts";
import { countTokens } from "../core/tokens.ts";
import type { RawNode } from "../store/records.ts";
import type { Budget } from "./budget.ts";
import { packBudget } from "./budget-packer.ts";
import type { EvidenceItem, EvidencePack } from "./evidence-pack.ts";

export interface ReaderOptions {
  /**
   * Whether the reader looks at pixels. Without vision every image is handed over as its text
   * (caption, OCR) and charged as text tokens; with vision only images without pixels are.
   */
  readonly vision: boolean;
}

/** Packs ranked raw nodes under the joint budget and shapes the evidence items. Pure. */
export function assemblePack(
  ranked: readonly Fused[],
  nodes: ReadonlyMap<string, RawNode>,
  budget: Budget,
  reader: ReaderOptions,
): Pick<EvidencePack, "items" | "budget"> {
  const candidates = ranked.flatMap((hit) => {
    const node = nodes.get(hit.id);
    return node ? [{ hit, node }] : [];
  });
  const tokens = new Map(candidates.map(({ hit, node }) => [hit.id, readerTokens(node, reader)]));
  const pack = packBudget(
    candidates.map(({ hit, node }) => ({
      id: hit.id,
      textTokens: tokens.get(hit.id) ?? 0,
      images: reader.vision ? node.images.flatMap((image) => (image.hash ? [image.hash] : [])) : [],
    })),
    budget,
  );
  const byId = new Map(candidates.map((candidate) => [candidate.hit.id, candidate]));
  const items = pack.selected.map((decision) => {
    const candidate = byId.get(decision.id);
    if (!candidate) {
      throw new InvariantError("packed-candidate", `the pack selected ${decision.id}, which it was not given`, [
        decision.id,
      ]);
    }
    return toEvidenceItem(candidate.node, {
      keptImages: new Set(decision.images),
      imagesCut: decision.imagesCut.length,
      hit: candidate.hit,
      textTokens: tokens.get(decision.id) ?? 0,
      reader,
    });
  });
  return {
    items,
    budget: {
      limits: budget,
      used: pack.used,
      cut: pack.cutCounts,
      cutItems: pack.cut.map((cut) => ({ rawNodeId: cut.id, dimension: cut.dimension })),
    },
  };
}

/** Images the reader receives as text rather than pixels. */
function imagesAsText(node: RawNode, reader: ReaderOptions) {
  return node.images.filter((image) => image.hash === null || !reader.vision);
}

/** Text a reader is handed for a raw node: its text plus the text of images it gets as text. */
function readerTokens(node: RawNode, reader: ReaderOptions): number {
  const imageText = imagesAsText(node, reader).flatMap((image) => [image.caption, image.derivedText]);
  return countTokens([node.text, ...imageText].filter(Boolean).join("\n"));
}

function toEvidenceItem(
  node: RawNode,
  context: {
    keptImages: ReadonlySet<string>;
    imagesCut: number;
    hit: Fused | undefined;
    textTokens: number;
    reader: ReaderOptions;
  },
): EvidenceItem {
  return {
    rawNodeId: node.id,
    text: node.text,
    images: node.images.flatMap((image) =>
      image.hash && context.keptImages.has(image.hash)
        ? [
            {
              hash: image.hash,
              mediaType: image.mediaType ?? "application/octet-stream",
              bytes: image.bytes ?? 0,
              width: image.width ?? 0,
              height: image.height ?? 0,
              caption: image.caption,
              derivedText: image.derivedText,
              thumbnail: { hash: image.hash, mediaType: "image/webp" as const },
            },
          ]
        : [],
    ),
    imagesAsText: imagesAsText(node, context.reader).map((image) => ({
      hash: image.hash,
      caption: image.caption,
      derivedText: image.derivedText,
      origin: image.origin,
    })),
    imagesCut: context.imagesCut,
    provenance: {
      sessionId: node.sessionId,
      sessionKey: node.sessionKey,
      turn: node.turn,
      time: node.time,
      speaker: node.speaker,
      role: node.role,
      source: node.source,
      uri: node.uri,
    },
    score: context.hit?.score ?? 0,
    channels: context.hit?.channels ?? {},
    textTokens: context.textTokens,
  };
}
