/**
 * Vector maths and codecs shared by every layer: every vector here is unit length or null.
 * The `vector[index] as number` reads in the loops below stay casts: every index is under the
 * length just checked, and a narrowing helper per element would slow the hottest loops in search.
 */

export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  let dot = 0;
  for (let index = 0; index < a.length; index++) dot += (a[index] as number) * (b[index] as number);
  return dot;
}

/** Unit-length mean of unit vectors; null when there are none. */
export function meanVector(vectors: readonly Float32Array[]): Float32Array | null {
  const first = vectors[0];
  if (!first) return null;
  const sum = new Float32Array(first.length);
  for (const vector of vectors) {
    for (let index = 0; index < sum.length; index++) sum[index] = (sum[index] as number) + (vector[index] as number);
  }
  return normalise(sum);
}

/** Unit-length weighted mean of two means, so merging entries equals averaging all their raw nodes. */
export function mergeMeans(
  a: Float32Array | null,
  weightA: number,
  b: Float32Array | null,
  weightB: number,
): Float32Array | null {
  if (!a || weightA === 0) return b;
  if (!b || weightB === 0) return a;
  const sum = new Float32Array(a.length);
  for (let index = 0; index < sum.length; index++) {
    sum[index] = (a[index] as number) * weightA + (b[index] as number) * weightB;
  }
  return normalise(sum);
}

export function normalise(vector: Float32Array): Float32Array {
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm);
  if (norm === 0) return vector;
  for (let index = 0; index < vector.length; index++) vector[index] = (vector[index] as number) / norm;
  return vector;
}

/** The bytes of a vector (little-endian float32), without copying. */
export function vectorBytes(vector: Float32Array): Uint8Array {
  return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
}

/**
 * A vector from stored bytes. Copies: a buffer handed out by a database driver may be a view into a
 * pooled allocation that is reused after the call.
 */
export function vectorFromBytes(bytes: Uint8Array): Float32Array {
  return new Float32Array(new Uint8Array(bytes).buffer);
}
