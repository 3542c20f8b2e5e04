import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { packBudget } from "../../src/evidence/budget-packer.ts";

describe("packBudget", () => {
  it("never exceeds any dimension and accounts for every candidate (property)", () => {
    const candidate = fc.record({
      id: fc.uuid(),
      textTokens: fc.integer({ min: 0, max: 400 }),
      images: fc.array(fc.constantFrom("h1", "h2", "h3", "h4", "h5", "h6"), { maxLength: 4 }),
    });
    const budget = fc.record({
      pages: fc.constant(3),
      rawNodes: fc.integer({ min: 0, max: 12 }),
      images: fc.integer({ min: 0, max: 8 }),
      textTokens: fc.integer({ min: 0, max: 2_000 }),
    });
    fc.assert(
      fc.property(fc.uniqueArray(candidate, { selector: (c) => c.id, maxLength: 30 }), budget, (candidates, limits) => {
        const result = packBudget(candidates, limits);
        assert.ok(result.used.rawNodes <= limits.rawNodes);
        assert.ok(result.used.images <= limits.images);
        assert.ok(result.used.textTokens <= limits.textTokens);
        assert.equal(result.selected.length + result.cut.length, candidates.length);
        const distinctImages = new Set(result.selected.flatMap((decision) => decision.images));
        assert.equal(distinctImages.size, result.used.images);
      }),
    );
  });

  it("skips a candidate too long for the token budget but still admits a later short one", () => {
    const result = packBudget(
      [
        { id: "long", textTokens: 900, images: [] },
        { id: "short", textTokens: 50, images: [] },
      ],
      { pages: 3, rawNodes: 5, images: 5, textTokens: 100 },
    );
    assert.deepEqual(
      result.selected.map((decision) => decision.id),
      ["short"],
    );
    assert.deepEqual(result.cut, [{ id: "long", dimension: "textTokens" }]);
  });

  it("keeps the text of a node whose images no longer fit, and reports the cut images", () => {
    const result = packBudget(
      [
        { id: "a", textTokens: 1, images: ["h1"] },
        { id: "b", textTokens: 1, images: ["h2", "h1"] },
      ],
      { pages: 3, rawNodes: 5, images: 1, textTokens: 100 },
    );
    assert.deepEqual(result.selected, [
      { id: "a", images: ["h1"], imagesCut: [] },
      { id: "b", images: ["h1"], imagesCut: ["h2"] },
    ]);
    assert.equal(result.cutCounts.images, 1);
  });
});
