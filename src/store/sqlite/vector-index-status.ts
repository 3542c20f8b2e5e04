import type { VectorPartition } from "./vector-partition.ts";

export type VectorIndexState = "exact" | "building" | "ready" | "failed";

/** What `VectorIndexes.status` reports of one (space, scope) partition. */
export interface VectorIndexStatus {
  readonly state: VectorIndexState;
  /** Vectors the partition holds (what `minVectors` is checked against). */
  readonly vectors: number;
  /** Vectors in the loaded index, if one is loaded. */
  readonly indexed: number | null;
  readonly error: string | null;
}

/** Where the partition's index stands: searched through it, being built, failed, or exact scans only. */
export function partitionStatus(partition: VectorPartition, vectors: number): VectorIndexStatus {
  const state: VectorIndexState = partition.index
    ? "ready"
    : partition.building
      ? "building"
      : partition.error
        ? "failed"
        : "exact";
  return { state, vectors, indexed: partition.index?.size ?? null, error: partition.error };
}
