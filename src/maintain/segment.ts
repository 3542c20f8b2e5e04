import { cosine } from "../core/vectors.ts";

/**
 * Splits a session's raw nodes into coherent segments of at most `maxNodes`, cutting where
 * consecutive raw nodes are least alike (a topic shift). Each segment is at least half the
 * maximum long, except a session shorter than that. Deterministic; returns [start, end) ranges.
 */
/** Dissimilarity charged where a raw node has no vector (no text): halfway, neither a shift nor a continuation. */
const unknownGap = 0.5;

export function segmentSession(vectors: readonly (Float32Array | null)[], maxNodes: number): [number, number][] {
  const count = vectors.length;
  if (count <= maxNodes) return [[0, count]];
  const minNodes = Math.max(1, Math.ceil(maxNodes / 2));
  const gap = (index: number) => {
    const left = vectors[index - 1];
    const right = vectors[index];
    return left && right ? 1 - cosine(left, right) : unknownGap;
  };
  const segments: [number, number][] = [];
  let start = 0;
  while (count - start > maxNodes) {
    // Cut between `start + minNodes` and `start + maxNodes`, leaving a tail of at least `minNodes`.
    const last = Math.min(start + maxNodes, count - minNodes);
    let cut = Math.min(start + minNodes, last);
    for (let index = cut + 1; index <= last; index++) if (gap(index) > gap(cut)) cut = index;
    segments.push([start, cut]);
    start = cut;
  }
  segments.push([start, count]);
  return segments;
}
