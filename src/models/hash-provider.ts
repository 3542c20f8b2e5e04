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
      return texts.map((text) => embedText(text, dimensions));
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

/**
 * Word unigrams, word bigrams and the character trigrams of each word padded with `#`, weighted 1, 1
 * and 0.5, each added to the slot and with the sign its MD5 picks. A word's own features (its
 * unigram and trigrams) are hashed once per word (`hashesOfWord`), not rebuilt as strings for every
 * text it appears in; they are added in the same order as always (unigram, bigram, trigrams), and
 * sums of ±1 and ±0.5 are exact in float32 anyway, so vectors are unchanged.
 */
function embedText(text: string, dimensions: number): Float32Array {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const vector = new Float32Array(dimensions);
  const add = (packed: number, weight: number) => {
    const slot = Math.floor(packed / 2) % dimensions;
    vector[slot] = (vector[slot] as number) + (packed % 2 === 1 ? weight : -weight);
  };
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    const own = hashesOfWord(word);
    add(own.unigram, 1);
    if (i + 1 < words.length) add(featureHash(`b:${word} ${words[i + 1]}`), 1);
    for (const trigram of own.trigrams) add(trigram, 0.5);
  }
  return normalise(vector);
}

/** A word's unigram and character-trigram features, hashed (`featureHash`), in the order they are added. */
interface WordHashes {
  readonly unigram: number;
  readonly trigrams: readonly number[];
}

const wordHashes = new Map<string, WordHashes>();
const maxRememberedWords = 100_000;

function hashesOfWord(word: string): WordHashes {
  let hashes = wordHashes.get(word);
  if (hashes === undefined) {
    const padded = `#${word}#`;
    const trigrams: number[] = [];
    for (let j = 0; j + 3 <= padded.length; j++) trigrams.push(featureHash(`c:${padded.slice(j, j + 3)}`));
    hashes = { unigram: featureHash(`w:${word}`), trigrams };
    if (wordHashes.size >= maxRememberedWords) wordHashes.clear();
    wordHashes.set(word, hashes);
  }
  return hashes;
}

/**
 * Each feature's MD5 (its slot and sign), remembered: features repeat heavily (character trigrams,
 * common words), and hashing each one anew through node:crypto cost more than the rest of ingest's
 * embedding and most of its garbage. Bounded: cleared when full.
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

export function normalise(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const value of vector) sum += value * value;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i] = (vector[i] as number) / norm;
  return vector;
}
