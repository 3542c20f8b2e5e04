import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cjkBigrams, lexicalDocument } from "../../src/store/lexical-text.ts";
import { queryTerms } from "../../src/store/query-terms.ts";

describe("CJK bigrams for lexical search", () => {
  it("leaves text without CJK characters exactly as it was, so English indexing is unchanged", () => {
    for (const text of ["Ana's zebras, at 5pm — café crème", "", "Привет мир", "naïve résumé 42"]) {
      assert.equal(lexicalDocument(text), text);
    }
  });

  it("indexes a run as its characters and overlapping pairs, split from the Latin words beside it", () => {
    assert.deepEqual(cjkBigrams("东京塔"), ["东京", "京塔"]);
    assert.deepEqual(cjkBigrams("猫"), ["猫"]);
    assert.equal(lexicalDocument("Leica相机"), "Leica 相 机 相机 ");
    assert.deepEqual(lexicalDocument("タワー!").trim().split(/\s+/), ["タ", "ワ", "ー", "タワ", "ワー", "!"]);
  });

  it("turns a query's runs into pairs (one character stays one), keeping English terms and stop-word rules", () => {
    assert.deepEqual(queryTerms("东京塔在哪里"), ["东京", "京塔", "塔在", "在哪", "哪里"]);
    assert.deepEqual(queryTerms("猫"), ["猫"]);
    assert.deepEqual(queryTerms("What did Ana buy in 東京?"), ["ana", "buy", "東京"]);
    assert.deepEqual(queryTerms("the Leica相机"), ["leica", "相机"]);
  });
});
