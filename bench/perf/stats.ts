/** Pure helpers for the performance benchmark: percentiles, exact top-k, recall. */

/** Nearest-rank percentile (p in 0..100) of unsorted samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((left, right) => left - right);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export interface Latency {
  readonly p50: number;
  readonly p95: number;
}

export function latency(samples: readonly number[]): Latency {
  return { p50: percentile(samples, 50), p95: percentile(samples, 95) };
}

/** All vectors of a partition, row-major, with the key of each row. */
export interface VectorMatrix {
  readonly keys: readonly string[];
  readonly dimensions: number;
  readonly values: Float32Array;
}

export interface Scored {
  readonly key: string;
  readonly score: number;
}

/**
 * The exact top-k by dot product (cosine: vectors are unit length), in plain JS: the reference the
 * ANN is measured against, and the floor any index must beat.
 */
export function bruteForceTopK(matrix: VectorMatrix, query: Float32Array, k: number): Scored[] {
  const { dimensions, values } = matrix;
  // The k best so far, best first; a new score enters by insertion (k is small).
  const rows: number[] = [];
  const scores: number[] = [];
  for (let row = 0; row < matrix.keys.length; row++) {
    let sum = 0;
    const offset = row * dimensions;
    for (let column = 0; column < dimensions; column++) {
      sum += (values[offset + column] as number) * (query[column] as number);
    }
    if (scores.length === k && sum <= (scores[k - 1] as number)) continue;
    let position = scores.length;
    while (position > 0 && (scores[position - 1] as number) < sum) position--;
    scores.splice(position, 0, sum);
    rows.splice(position, 0, row);
    if (scores.length > k) {
      scores.pop();
      rows.pop();
    }
  }
  return rows.map((row, position) => ({ key: matrix.keys[row] as string, score: scores[position] as number }));
}

/**
 * recall@k of `found` against the exact answer, counting ties: a found key whose exact score is at
 * least the exact k-th score (less a float epsilon) is a hit even if exact search ordered an equal
 * row first, since either is a correct answer.
 */
export function recallAtK(found: readonly string[], exact: readonly Scored[], exactScoreOf: (key: string) => number) {
  const k = exact.length;
  if (k === 0) return 1;
  const kth = (exact.at(-1) as Scored).score - 1e-5;
  const hits = found.slice(0, k).filter((key) => exactScoreOf(key) >= kth).length;
  return hits / k;
}

/**
 * Exact scores against `vector` of the rows of `matrix` by key (`recallAtK`'s `exactScoreOf`): a key
 * the matrix does not hold scores below everything. `rowOf` maps keys to rows (`rowsByKey`).
 */
export function exactScorer(matrix: VectorMatrix, rowOf: ReadonlyMap<string, number>, vector: Float32Array) {
  return (key: string): number => {
    const row = rowOf.get(key);
    return row === undefined ? Number.NEGATIVE_INFINITY : dot(vector, matrix.values, row * matrix.dimensions);
  };
}

/** Each key of `matrix` to its row. */
export function rowsByKey(matrix: VectorMatrix): Map<string, number> {
  return new Map(matrix.keys.map((key, row) => [key, row]));
}

export function dot(left: Float32Array, right: Float32Array, rightOffset = 0): number {
  let sum = 0;
  for (let index = 0; index < left.length; index++) {
    sum += (left[index] as number) * (right[rightOffset + index] as number);
  }
  return sum;
}

/**
 * Two rankings the same up to near-ties: equal lengths, scores equal rank by rank within `tolerance`,
 * and an id that differs only where its score is that close to the other's (ties broken another way,
 * of sums added in another order or scores from other arithmetic).
 */
export function sameUpToTies(
  a: readonly { id: string; score: number }[],
  b: readonly { id: string; score: number }[],
  tolerance: number,
): boolean {
  if (a.length !== b.length) return false;
  const scoreOf = new Map(b.map((hit) => [hit.id, hit.score]));
  const last = b.at(-1)?.score ?? 0;
  return a.every((hit, rank) => {
    const own = scoreOf.get(hit.id);
    return (
      Math.abs(hit.score - (b[rank] as { score: number }).score) <= tolerance &&
      (own === undefined ? Math.abs(hit.score - last) <= tolerance : Math.abs(own - hit.score) <= tolerance)
    );
  });
}
