import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ablationOptions, ablations } from "../../src/bench/ablations.ts";
import { InputError } from "../../src/core/errors.ts";
import { plainIndexTextConfig } from "../../src/store/index-text.ts";

describe("bench ablations", () => {
  it("switches a named lever off and leaves every other setting at its default", () => {
    assert.deepEqual(ablationOptions([]), {});
    assert.deepEqual(ablationOptions(["context-text"]), { indexText: plainIndexTextConfig });
    assert.deepEqual(ablationOptions(["neighbours"]), { indexText: { neighbours: 0 } });
    for (const [name, ablation] of Object.entries(ablations)) assert.ok(ablation.description, name);
  });

  it("refuses an unknown lever with an InputError naming the known ones", () => {
    assert.throws(
      () => ablationOptions(["context-text", "telepathy"]),
      (error: unknown) =>
        error instanceof InputError && /telepathy/.test(error.message) && /context-text/.test(error.message),
    );
  });
});
