import { createHash } from "node:crypto";
import { checkBatchSize } from "./model-calls.ts";
import type { ImageEmbedder, Models, TextEmbedder } from "./provider.ts";

/**
 * Deterministic, dependency-free embeddings: signed feature hashing of word unigrams,
 * bigrams and character trigrams. Not semantic, but lexical overlap gives real similarity,
 * which is what fast unit tests need.
 */
export function hashTextEmbedder(dimensions = 256): TextEmbedder {
  const embedder: TextEmbedder = {
    id: `hash-ngram-${dimensions}`,
    provider: "hash",
    dimensions,
    maxBatchSize: 1024,
    // Hashing runs synchronously on the calling thread: a second call in flight could not overlap the first.
    maxParallelCalls: 1,
    // A pure function: nothing transient can fail, so there is nothing to retry.
    maxRetries: 0,
    async embed(texts) {
      checkBatchSize(embedder, texts.length);
      return texts.map((text) => embedFeatures(textFeatures(text), dimensions));
    },
  };
  return embedder;
}

/** Image "features" from a coarse byte histogram; identical bytes give identical vectors. */
export function hashImageEmbedder(dimensions = 64): ImageEmbedder {
  const embedder: ImageEmbedder = {
    id: `hash-bytes-${dimensions}`,
    provider: "hash",
    dimensions,
    maxBatchSize: 256,
    // Synchronous, like the text embedder: parallel calls would only take turns.
    maxParallelCalls: 1,
    maxRetries: 0,
    async embedImages(images) {
      checkBatchSize(embedder, images.length);
      return images.map((bytes) => {
        const vector = new Float32Array(dimensions);
        const step = Math.max(1, Math.floor(bytes.length / 4096));
        for (let i = 0; i < bytes.length; i += step) {
          const slot = ((bytes[i] ?? 0) * 31 + (i % 7)) % dimensions;
          vector[slot] = (vector[slot] ?? 0) + 1;
        }
        return normalise(vector);
      });
    },
  };
  return embedder;
}

export function createHashModels(options: { dimensions?: number } = {}): Models {
  return {
    profile: "hash",
    text: hashTextEmbedder(options.dimensions ?? 256),
    image: hashImageEmbedder(),
    imageReaders: [],
    async close() {},
  };
}

function textFeatures(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const features: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    features.push(`w:${word}`);
    if (i + 1 < words.length) features.push(`b:${word} ${words[i + 1]}`);
    const padded = `#${word}#`;
    for (let j = 0; j + 3 <= padded.length; j++) features.push(`c:${padded.slice(j, j + 3)}`);
  }
  return features;
}

/**
 * Each feature's MD5 (its slot and sign), remembered: features repeat heavily (character trigrams,
 * common words), and hashing each one anew through node:crypto cost more than the rest of ingest's
 * embedding and most of its garbage. Bounded: cleared when full. Vectors are exactly as before.
 */
const featureHashes = new Map<string, number>();
const maxRememberedFeatures = 200_000;

function featureHash(feature: string): number {
  let packed = featureHashes.get(feature);
  if (packed === undefined) {
    const digest = createHash("md5").update(feature).digest();
    // The first four bytes pick the slot, the low bit of the fifth the sign.
    packed = digest.readUInt32LE(0) * 2 + ((digest[4] ?? 0) & 1);
    if (featureHashes.size >= maxRememberedFeatures) featureHashes.clear();
    featureHashes.set(feature, packed);
  }
  return packed;
}

function embedFeatures(features: readonly string[], dimensions: number): Float32Array {
  const vector = new Float32Array(dimensions);
  for (const feature of features) {
    const packed = featureHash(feature);
    const slot = Math.floor(packed / 2) % dimensions;
    const sign = packed % 2 === 1 ? 1 : -1;
    const weight = feature.startsWith("c:") ? 0.5 : 1;
    vector[slot] = (vector[slot] ?? 0) + sign * weight;
  }
  return normalise(vector);
}

export function normalise(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const value of vector) sum += value * value;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i] = (vector[i] as number) / norm;
  return vector;
}
