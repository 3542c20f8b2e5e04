import { meanVector } from "../core/vectors.ts";
import type { PointerRef } from "../store/index-records.ts";
import type { RawNode } from "../store/records.ts";
import type { ScopedStore } from "../store/store.ts";
import { buildDigest } from "./digest.ts";
import { segmentSession } from "./segment.ts";
import type { IncomingEntry } from "./working-index.ts";

/** One raw node as maintenance sees it on the write path. */
export interface IncomingNode {
  readonly ref: PointerRef;
  readonly speaker: string | null;
  readonly text: string;
  readonly imageText: readonly string[];
  readonly timeMs: number;
  /** Text vector of the raw node (null for an empty one). */
  readonly vector: Float32Array | null;
  readonly imageVectors: readonly Float32Array[];
}

/**
 * Incoming entries of one session: one per coherent segment (C3M m_t = (z, P, τ)), each with a
 * digest for its routing text, the mean text and image vectors of its raw nodes, its pointers and
 * its time span.
 */
export function buildIncomingEntries(
  sessionKey: string,
  nodes: readonly IncomingNode[],
  options: { readonly segmentMaxNodes: number; readonly dimensions: number },
): IncomingEntry[] {
  if (nodes.length === 0) return [];
  return segmentSession(
    nodes.map((node) => node.vector),
    options.segmentMaxNodes,
  ).map(([start, end]) => {
    const segment = nodes.slice(start, end);
    const textVectors = segment.flatMap((node) => (node.vector ? [node.vector] : []));
    const imageVectors = segment.flatMap((node) => node.imageVectors);
    const times = segment.map((node) => node.timeMs);
    return {
      digest: buildDigest(segment),
      vector: meanVector(textVectors) ?? new Float32Array(options.dimensions),
      vectorWeight: textVectors.length,
      imageVector: meanVector(imageVectors),
      imageWeight: imageVectors.length,
      pointers: segment.map((node) => node.ref),
      sessions: [sessionKey],
      timeStartMs: Math.min(...times),
      timeEndMs: Math.max(...times),
    };
  });
}

/** A stored raw node as maintenance sees it: `ref` is its id. */
export interface StoredNode extends IncomingNode {
  readonly sessionKey: string;
}

/**
 * Stored raw nodes with the vectors maintenance compares: each node's text vector and the vectors
 * of its images, read from the store rather than computed again (replay, forget's re-derivation).
 */
export async function withStoredVectors(
  scoped: ScopedStore,
  nodes: readonly RawNode[],
  spaces: { readonly text: string; readonly image: string | null },
): Promise<StoredNode[]> {
  const vectors = await scoped.readVectors(
    spaces.text,
    nodes.map((node) => node.id),
  );
  const hashes = [...new Set(nodes.flatMap((node) => node.images.flatMap((image) => image.hash ?? [])))];
  const imageVectors = spaces.image ? await scoped.knownImages(hashes, spaces.image) : new Map();
  return nodes.map((node) => ({
    ref: node.id,
    sessionKey: node.sessionKey,
    speaker: node.speaker,
    text: node.text,
    imageText: node.images.flatMap((image) =>
      [image.caption, image.derivedText].filter((text): text is string => !!text),
    ),
    timeMs: Date.parse(node.time),
    vector: vectors.get(node.id) ?? null,
    imageVectors: node.images.flatMap((image) => {
      const vector = image.hash ? imageVectors.get(image.hash)?.vector : null;
      return vector ? [vector] : [];
    }),
  }));
}
