import { meanVector } from "../core/vectors.ts";
import type { PointerRef } from "../store/index-records.ts";
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
