import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { imageTokenRuleNamed, imageTokens } from "../../src/context/image-tokens.ts";
import { InputError } from "../../src/core/errors.ts";

describe("image token rules", () => {
  it("openai-tile follows OpenAI's published examples", () => {
    // 1024² → short side 768 → 768² → 2×2 tiles.
    assert.equal(imageTokens({ width: 1024, height: 1024 }, { kind: "openai-tile" }), 85 + 170 * 4);
    // 2048×4096 → fits 1024×2048 → 768×1536 → 2×3 tiles.
    assert.equal(imageTokens({ width: 2048, height: 4096 }, { kind: "openai-tile" }), 1105);
    // A small image is not scaled up: one tile.
    assert.equal(imageTokens({ width: 512, height: 512 }, { kind: "openai-tile" }), 255);
    assert.equal(imageTokens({ width: 4000, height: 3000, detail: "low" }, { kind: "openai-tile" }), 85);
  });

  it("patch counts 28×28 blocks, rounding each side up", () => {
    assert.equal(imageTokens({ width: 28, height: 28 }, { kind: "patch" }), 1);
    assert.equal(imageTokens({ width: 29, height: 28 }, { kind: "patch" }), 2);
    assert.equal(imageTokens({ width: 750, height: 1050 }, { kind: "patch" }), 27 * 38);
    assert.equal(imageTokens({ width: 140, height: 140 }, { kind: "patch", patchSize: 14 }), 100);
  });

  it("patch tokens grow with area: a full-size page costs about 78% more than at 0.75× (VERA App. C)", () => {
    const full = imageTokens({ width: 1000, height: 1400 }, { kind: "patch" });
    const scaled = imageTokens({ width: 750, height: 1050 }, { kind: "patch" });
    assert.ok(Math.abs(full / scaled - 1 / 0.75 ** 2) < 0.03, `${full} / ${scaled}`);
  });

  it("area divides pixels by 750 after shrinking the long edge to 1568", () => {
    assert.equal(imageTokens({ width: 1000, height: 750 }, { kind: "area" }), 1000);
    assert.equal(imageTokens({ width: 3136, height: 1568 }, { kind: "area" }), Math.ceil((1568 * 784) / 750));
  });

  it("refuses sizes that are not positive and names unknown rules", () => {
    assert.throws(() => imageTokens({ width: 0, height: 10 }), InputError);
    assert.throws(() => imageTokens({ width: Number.NaN, height: 10 }), InputError);
    assert.deepEqual(imageTokenRuleNamed("patch"), { kind: "patch" });
    assert.throws(() => imageTokenRuleNamed("tiles"), /openai-tile, patch, area/);
  });
});
