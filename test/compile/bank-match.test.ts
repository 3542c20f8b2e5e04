import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { matchBank } from "../../src/compile/bank-match.ts";
import { normalise } from "../../src/core/vectors.ts";

const vector = (...values: number[]) => normalise(Float32Array.from(values));
const bank = [
  { id: "bike", question: "What colour is the bike Rocket?", vector: vector(1, 0, 0), imageVector: vector(1, 0) },
  { id: "dog", question: "What does Biscuit the corgi eat?", vector: vector(0, 1, 0), imageVector: null },
  { id: "trip", question: "Where did Ana go hiking in May?", vector: vector(0, 0, 1), imageVector: null },
];

describe("bank matching (similarity-weighted, normalised RRF)", () => {
  it("scores a question asked exactly as banked 1, ranked first by every channel", () => {
    const [best, next] = matchBank(
      { text: bank[0]?.question ?? "", vector: vector(1, 0, 0), imageVector: undefined },
      bank,
      60,
    );
    assert.equal(best?.id, "bike");
    assert.ok(Math.abs((best?.score ?? 0) - 1) < 1e-6, `score ${best?.score}`);
    assert.ok((next?.score ?? 0) < 0.5, "the others stay far below");
    assert.deepEqual(Object.keys(best?.channels ?? {}), ["bm25", "dense"]);
  });

  it("keeps an unrelated best match low instead of scoring rank 1 as a match", () => {
    const matches = matchBank(
      { text: "quarterly tax forms", vector: vector(0.1, 0.1, -1), imageVector: undefined },
      bank,
      60,
    );
    assert.ok(
      matches.every((match) => match.score < 0.2),
      JSON.stringify(matches),
    );
  });

  it("averages over the channels the query uses: a query image adds the image channel", () => {
    const text = { text: "What colour is the bike?", vector: vector(1, 0.2, 0) };
    const withoutImage = matchBank({ ...text, imageVector: undefined }, bank, 60)[0];
    const withImage = matchBank({ ...text, imageVector: vector(1, 0) }, bank, 60)[0];
    assert.equal(withImage?.id, "bike");
    assert.ok(withImage?.channels.image, "the image channel took part");
    assert.ok((withImage?.score ?? 0) > (withoutImage?.score ?? 0), "a matching image raises the score");
    assert.ok((withImage?.score ?? 0) <= 1);
  });

  it("returns nothing for a query with no words and no vectors", () => {
    assert.deepEqual(matchBank({ text: "the and of", vector: undefined, imageVector: undefined }, bank, 60), []);
  });
});
