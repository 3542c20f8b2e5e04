import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CairnError, InvariantError } from "../../src/core/errors.ts";
import { itemAt } from "../../src/core/narrow.ts";
import { defaultIndexBounds } from "../../src/maintain/config.ts";
import { WorkingIndex } from "../../src/maintain/working-index.ts";
import { applyOps } from "../../src/store/index-plan.ts";
import { errorResponse } from "../../src/surfaces/http/errors.ts";

describe("InvariantError", () => {
  it("is a CairnError naming the broken rule and the records involved", () => {
    const error = new InvariantError("link-target", "link to unknown entry e1", ["e1"]);
    assert.ok(CairnError.is(error));
    assert.equal(error.code, "invariant");
    assert.equal(error.name, "InvariantError");
    assert.deepEqual([error.invariant, error.ids], ["link-target", ["e1"]]);
  });

  it("is what maintenance raises when an op names an entry that is not there", () => {
    const index = new WorkingIndex({ version: 0, entries: new Map() }, defaultIndexBounds, () => "e1", 0);
    assert.throws(() => index.get("missing"), { name: "InvariantError", invariant: "working-index-entry" });
    assert.throws(() => applyOps({ version: 0, entries: new Map() }, [{ op: "link", entryId: "e9", pointers: [] }]), {
      name: "InvariantError",
      ids: ["e9"],
    });
    assert.throws(() => itemAt([], 0, "two-entries"), { name: "InvariantError", invariant: "two-entries" });
  });

  it("answers HTTP 500 with its code, and reaches the log like any internal failure", () => {
    const logged: unknown[] = [];
    const error = new InvariantError("link-target", "link to unknown entry e1", ["e1"]);
    const { status, body } = errorResponse(error, (unexpected) => logged.push(unexpected));
    assert.equal(status, 500);
    assert.equal(body.error.code, "invariant");
    assert.deepEqual(logged, [error]);
  });
});
