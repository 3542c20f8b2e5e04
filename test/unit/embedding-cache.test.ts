import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EmbeddingCache } from "../../src/models/embedding-cache.ts";

describe("EmbeddingCache", () => {
  const recorder = () => {
    const calls: string[] = [];
    const embed = async (text: string) => {
      calls.push(text);
      return new Float32Array([text.length]);
    };
    return { calls, embed };
  };

  it("embeds a text once while it stays among the most recent, and evicts the least recent", async () => {
    const { calls, embed } = recorder();
    const cache = new EmbeddingCache(2);
    await cache.get("acme", "a", embed);
    await cache.get("acme", "bb", embed);
    await cache.get("acme", "a", embed); // refreshes "a"
    await cache.get("acme", "ccc", embed); // evicts "bb"
    await cache.get("acme", "a", embed);
    await cache.get("acme", "bb", embed);
    assert.deepEqual(calls, ["a", "bb", "ccc", "bb"]);
  });

  it("never answers one tenant from another's entry: a hit would tell it what the other asked", async () => {
    const { calls, embed } = recorder();
    const cache = new EmbeddingCache(8);
    await cache.get("acme", "where does ana live", embed);
    await cache.get("globex", "where does ana live", embed);
    await cache.get("acme", "where does ana live", embed);
    assert.deepEqual(calls, ["where does ana live", "where does ana live"], "one embedding per tenant");
  });
});
