import assert from "node:assert/strict";
import { test } from "node:test";
import { countTokens, fitTokens } from "../../src/core/tokens.ts";

const long = Array.from({ length: 120 }, (_, index) => `word${index} moved to Lisbon on ${index} May`).join(" / ");

test("a cut keeps at most the limit, on a word boundary, and says how many tokens it kept", () => {
  for (const limit of [1, 7, 40, 200]) {
    const { text, tokens } = fitTokens(long, limit);
    assert.ok(tokens <= limit, `${tokens} tokens for a limit of ${limit}`);
    assert.equal(tokens, countTokens(text));
    assert.ok(long.startsWith(text));
    if (limit >= 40)
      assert.ok(long[text.length] === " " || tokens > 0.8 * limit, "a cut ends at a word or near the limit");
  }
});

test("a text within the limit is kept whole with its exact count", () => {
  const short = "Ana moved to Lisbon | keywords: bike helmet";
  assert.deepEqual({ ...fitTokens(short, 100) }, { text: short, tokens: countTokens(short) });
});

test("cutting the same text again gives the same cut (kept cuts are the computed ones)", () => {
  const first = { ...fitTokens(long, 33) };
  for (const limit of [10, 20, 30, 34, 35]) fitTokens(`${long} ${limit}`, limit);
  assert.deepEqual({ ...fitTokens(long, 33) }, first);
  assert.equal(first.tokens, countTokens(first.text));
  assert.ok(first.tokens <= 33);
});
