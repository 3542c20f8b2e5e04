import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { extractEntities } from "../../src/core/text.ts";

describe("extractEntities", () => {
  it("keeps names, drops a possessive and the quote or dash that closes a name", () => {
    assert.deepEqual(extractEntities("We watched 'Pacemaker' with Ana's sister in New York."), [
      "pacemaker",
      "ana",
      "new york",
    ]);
    assert.deepEqual(extractEntities("Jean-Luc’s bike"), ["jean-luc"]);
  });
});
