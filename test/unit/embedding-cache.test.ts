import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EmbeddingCache } from "../../src/models/embedding-cache.ts";

describe("EmbeddingCache", () => {
  it("embeds a text once while it stays among the most recent, and evicts the least recent", async () => {
    const calls: string[] = [];
    const embed = async (text: string) => {
      calls.push(text);
      return new Float32Array([text.length]);
    };
    const cache = new EmbeddingCache(2);
    await cache.get("a", embed);
    await cache.get("bb", embed);
    await cache.get("a", embed); // refreshes "a"
    await cache.get("ccc", embed); // evicts "bb"
    await cache.get("a", embed);
    await cache.get("bb", embed);
    assert.deepEqual(calls, ["a", "bb", "ccc", "bb"]);
  });
});
