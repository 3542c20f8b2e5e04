import type { HnswOptions } from "./vector-index.ts";

/** How the ANN registry (`VectorIndexes`) decides when and how to index a (scope, vector space) partition. */
export interface VectorIndexOptions {
  /**
   * Vectors a (scope, space) partition must hold before its searches use the ANN index. Below it an
   * exact vec0 scan of the partition takes a few milliseconds and is always exact.
   */
  readonly minVectors: number;
  readonly hnsw: HnswOptions;
  /** With filters, ANN candidates fetched per wanted result; too few survivors fall back to exact vec0. */
  readonly filterOverFetch: number;
  /** Most rows a persisted index may lag behind its partition before it is rebuilt rather than caught up. */
  readonly maxCatchUp: number;
}

export const defaultVectorIndexOptions: VectorIndexOptions = Object.freeze({
  // Where vec0's exact scan (~0.55 µs a vector here) starts to cost more than an HNSW search (~1 ms).
  minVectors: 2_000,
  // Chosen on the benchmark corpus at 100k (bench/results/perf.md): f32, because bf16 and f16 scores
  // cap recall@10 near 0.94; M=32 gives ≥ 0.98 for hashed n-gram vectors (the hard case: short
  // queries far from every document) and ≥ 0.99 for USE-lite at ef_search 512. ef_search grows with
  // the graph (decision 041): 512 holds recall@10 0.984 at 100k and 0.942 at 1M, 1024 holds 0.970 at
  // 1M and costs ~3 ms of a search at 100k; 1024 from 250,000 vectors keeps ~0.97 where 512 would
  // near 0.95, and 2048 from 4,000,000 is extrapolated from the same slope (not measured there).
  hnsw: Object.freeze({
    connectivity: 32,
    expansionAdd: 128,
    expansionSearch: 512,
    expansionSearchSteps: Object.freeze([
      Object.freeze([250_000, 1024] as const),
      Object.freeze([4_000_000, 2048] as const),
    ]),
    quantization: "f32" as const,
  }),
  // Ten candidates per wanted result: a filter that keeps at least ~1 row in 10 still fills k from the ANN path.
  filterOverFetch: 10,
  // Catch-up runs on the searching thread (a vec0 point lookup and an HNSW insert a row); a longer lag goes to a worker.
  maxCatchUp: 5_000,
});
