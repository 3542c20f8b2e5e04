import { embedImages, embedTexts } from "../models/model-calls.ts";
import type { Models } from "../models/provider.ts";
import type { VectorSpaces } from "../models/vector-spaces.ts";
import type { RawNode } from "../store/records.ts";
import type { ScopedStore } from "../store/store.ts";

/** What `reembedScope` did to one scope. */
export interface ReembedResult {
  /** The spaces the scope's vectors were in before, and are in now. */
  readonly from: readonly string[];
  readonly to: readonly string[];
  readonly rawNodes: number;
  readonly vectors: number;
  /** Images whose vector in the new space was already cached (by pixels) and reused. */
  readonly imagesReused: number;
}

/**
 * Makes every vector of a scope again with `models` (`cairn reembed`): turn text and image-derived
 * text as a write embeds them (an image-only turn by what its images say), image pixels read from
 * the scope's blobs (or a vector the tenant already cached for them in the new space), then hands
 * them to the store, which swaps them in one transaction and marks the index for a rebuild. Raw
 * nodes, blobs and image-derived text are only read: OCR and captions are not run again.
 * `onProgress` hears the raw nodes embedded so far.
 */
export async function reembedScope(
  scoped: ScopedStore,
  context: {
    readonly models: Models;
    readonly spaces: VectorSpaces;
    readonly batch?: number;
    readonly onProgress?: (done: number, total: number) => void;
    /**
     * The text a write embeds for each turn of one session (in turn order): the contextual index text
     * of the write path, so a re-embedded scope reads as a fresh write would. Default: the turn's own
     * text, or its image text for an image-only turn.
     */
    readonly turnTexts?: (nodes: readonly RawNode[]) => string[];
  },
): Promise<ReembedResult> {
  const { models, spaces } = context;
  const from = (await scoped.vectorSpacesInUse()).map((space) => space.name);
  const nodes: RawNode[] = [];
  const imageTexts: string[] = [];
  const turnTexts: string[] = [];
  for (const session of await scoped.readSessions({})) {
    const turns = await scoped.readRawNodes({ sessionId: session.id });
    const images = turns.map((node) =>
      node.images
        .flatMap((image) => [image.caption, image.derivedText])
        .filter(Boolean)
        .join("\n"),
    );
    nodes.push(...turns);
    imageTexts.push(...images);
    turnTexts.push(
      ...(context.turnTexts?.(turns) ?? turns.map((node, index) => node.text.trim() || (images[index] ?? ""))),
    );
  }
  const batch = context.batch ?? 64;
  const textVectors: (Float32Array | undefined)[] = [];
  const imageTextVectors: (Float32Array | undefined)[] = [];
  context.onProgress?.(0, nodes.length);
  for (let start = 0; start < nodes.length; start += batch) {
    const end = Math.min(start + batch, nodes.length);
    const vectors = await embedTexts(models.text, [...turnTexts.slice(start, end), ...imageTexts.slice(start, end)]);
    textVectors.push(...vectors.slice(0, end - start));
    imageTextVectors.push(...vectors.slice(end - start));
    context.onProgress?.(end, nodes.length);
  }

  const imageVectors = new Map<string, Float32Array>();
  let imagesReused = 0;
  const imageSpace = spaces.image;
  if (imageSpace && models.image) {
    const hashes = [
      ...new Set(nodes.flatMap((node) => node.images.flatMap((image) => (image.hash ? [image.hash] : [])))),
    ];
    const known = await scoped.knownImages(hashes, imageSpace.name);
    for (const [hash, { vector }] of known) {
      if (!vector) continue;
      imageVectors.set(hash, vector);
      imagesReused++;
    }
    const missing = hashes.filter((hash) => !imageVectors.has(hash));
    for (let start = 0; start < missing.length; start += batch) {
      const part = missing.slice(start, start + batch);
      const pixels = await Promise.all(part.map(async (hash) => (await scoped.readBlob(hash)).data));
      const vectors = await embedImages(models.image, pixels);
      part.forEach((hash, index) => {
        const vector = vectors[index];
        if (vector) imageVectors.set(hash, vector);
      });
    }
  }

  const inSpace = (space: string, vector: Float32Array | undefined) => (vector ? { [space]: vector } : {});
  const declared = imageSpace ? [spaces.text, spaces.imageText, imageSpace] : [spaces.text, spaces.imageText];
  const { vectors } = await scoped.replaceVectors({
    spaces: declared,
    rawNodes: nodes.map((node, index) => ({
      rawNodeId: node.id,
      textVectors: {
        ...inSpace(spaces.text.name, textVectors[index]),
        ...inSpace(spaces.imageText.name, imageTextVectors[index]),
      },
      imageVectors: node.images.map((image) => {
        const vector = image.hash ? imageVectors.get(image.hash) : undefined;
        return imageSpace && vector ? { [imageSpace.name]: vector } : {};
      }),
    })),
    audit: {
      action: "reembed",
      subject: "vectors",
      details: { from, models: declared.map((space) => space.name), rawNodes: nodes.length, imagesReused },
    },
  });
  const to = (await scoped.vectorSpacesInUse()).map((space) => space.name);
  return { from, to, rawNodes: nodes.length, vectors, imagesReused };
}
