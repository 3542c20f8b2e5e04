import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { toMatchExpression } from "../../src/store/sqlite/fts-query.ts";

describe("toMatchExpression", () => {
  it("quotes every word so user text can never be read as FTS5 syntax", () => {
    assert.equal(toMatchExpression('kayak" OR NEAR(xy) -bled*'), '"kayak" OR "near" OR "xy" OR "bled"');
  });

  it("drops single letters, the debris of possessives and contractions", () => {
    assert.equal(toMatchExpression("Ana's kayak isn't here"), '"ana" OR "kayak" OR "isn" OR "here"');
    assert.equal(toMatchExpression("day 5"), '"day" OR "5"');
  });

  it("drops very common words but keeps them when nothing else is left", () => {
    assert.equal(toMatchExpression("what is the kayak"), '"kayak"');
    assert.equal(toMatchExpression("what is it"), '"what" OR "is" OR "it"');
  });

  it("answers null when there is no word at all", () => {
    assert.equal(toMatchExpression("?! ..."), null);
  });
});
