import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defaultImageTokenRule } from "../../src/context/image-tokens.ts";
import { sharedPrefixTokens, TokenLedger } from "../../src/context/token-ledger.ts";
import { contextItem, costOf } from "../../src/context/working-context.ts";
import { countTokens } from "../../src/core/tokens.ts";

const item = (text: string) =>
  contextItem({ role: "user", content: text }, { form: "native", sources: [] }, defaultImageTokenRule);

describe("token accounting", () => {
  it("adds uncached input and output, excluding cache reads", () => {
    const ledger = new TokenLedger();
    ledger.record({ input: 1000, cachedInput: 0, output: 40 });
    ledger.record({ input: 1200, cachedInput: 1000, output: 60 });
    assert.deepEqual(ledger.totals, { calls: 2, input: 2200, cachedInput: 1000, output: 100, nonCache: 1300 });
    assert.throws(() => ledger.record({ input: 10, cachedInput: 11, output: 0 }), RangeError);
  });

  it("costs text with o200k plus a per-message overhead, and images by the rule", () => {
    const text = item("The blue bowl was glazed on Saturday.");
    assert.equal(text.textTokens, countTokens("The blue bowl was glazed on Saturday.") + 3);
    const image = contextItem(
      { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AA==" } }] },
      { form: "native", sources: [], images: [{ width: 1024, height: 1024 }] },
      defaultImageTokenRule,
    );
    assert.equal(image.imageTokens, 765);
    assert.deepEqual(costOf([text, image]), {
      textTokens: text.textTokens + 3,
      imageTokens: 765,
      total: text.textTokens + 3 + 765,
      images: 1,
    });
  });

  it("a prefix cache serves only the unchanged leading messages", () => {
    const a = item("system prompt");
    const b = item("first question");
    assert.equal(sharedPrefixTokens([a, b], [a, b, item("next")]), a.textTokens + b.textTokens);
    assert.equal(sharedPrefixTokens([a, b], [a, item("summary"), b]), a.textTokens);
    assert.equal(sharedPrefixTokens([], [a]), 0);
  });
});
