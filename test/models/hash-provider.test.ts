import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import { hashTextEmbedder } from "../../src/models/hash-provider.ts";

/**
 * The hash profile's vectors are stored: a store written earlier must keep matching what the embedder
 * gives now. Reference: each feature's MD5 picks the slot (first four bytes) and sign (fifth byte's
 * low bit), hashed afresh here for every feature.
 */
function reference(text: string, dimensions: number): Float32Array {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const vector = new Float32Array(dimensions);
  const add = (feature: string, weight: number) => {
    const digest = createHash("md5").update(feature).digest();
    const slot = digest.readUInt32LE(0) % dimensions;
    vector[slot] = (vector[slot] ?? 0) + ((digest[4] ?? 0) & 1 ? weight : -weight);
  };
  words.forEach((word, i) => {
    add(`w:${word}`, 1);
    if (i + 1 < words.length) add(`b:${word} ${words[i + 1]}`, 1);
    const padded = `#${word}#`;
    for (let j = 0; j + 3 <= padded.length; j++) add(`c:${padded.slice(j, j + 3)}`, 0.5);
  });
  const norm = Math.hypot(...vector);
  return norm > 0 ? vector.map((value) => value / norm) : vector;
}

describe("hash text embedder", () => {
  it("gives the same vectors as hashing every feature afresh, in every dimension, on repeated calls", async () => {
    const texts = ["The heron counted 7 pebbles", "Straße 東京 tower, the heron", "", "the the the heron"];
    for (const dimensions of [64, 256, 384]) {
      const embedder = hashTextEmbedder(dimensions);
      for (let round = 0; round < 2; round++) {
        const vectors = await embedder.embed(texts);
        for (const [i, text] of texts.entries()) {
          assert.deepEqual(vectors[i], reference(text, dimensions), `${dimensions}-d, round ${round}: ${text}`);
        }
      }
    }
  });
});
