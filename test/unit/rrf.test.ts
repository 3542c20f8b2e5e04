import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fuseRrf } from "../../src/channels/rrf.ts";

const ranked = (...ids: string[]) => ids.map((id, index) => ({ id, score: 10 - index }));

describe("fuseRrf", () => {
  it("scores each hit 1/(k + rank) summed over channels and keeps every channel's rank", () => {
    const fused = fuseRrf({ bm25: ranked("a", "b"), dense: ranked("b", "c") }, { k: 60, perChannel: 10 });
    assert.deepEqual(
      fused.map((hit) => hit.id),
      ["b", "a", "c"],
    );
    const b = fused[0];
    assert.ok(b);
    assert.equal(b.score, 1 / 62 + 1 / 61);
    assert.deepEqual(b.channels, { bm25: { rank: 2, score: 9 }, dense: { rank: 1, score: 10 } });
  });

  it("reads only the top perChannel of each list", () => {
    const fused = fuseRrf({ bm25: ranked("a", "b", "c") }, { k: 60, perChannel: 2 });
    assert.deepEqual(
      fused.map((hit) => hit.id),
      ["a", "b"],
    );
  });

  it("breaks ties by first appearance, so equal inputs give equal outputs", () => {
    const fused = fuseRrf({ bm25: ranked("x"), dense: ranked("y") }, { k: 60, perChannel: 10 });
    assert.deepEqual(
      fused.map((hit) => hit.id),
      ["x", "y"],
    );
  });
});
