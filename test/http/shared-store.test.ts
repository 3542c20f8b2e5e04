import { describe, it } from "node:test";
import { tempDir } from "../support/fixtures.ts";
import { twoInstancesOnOneStore } from "../support/shared-store.ts";

describe("two cairn serve instances on one store", () => {
  it("race writers to one scope through both, lose none, and read all through either (SQLite)", async (t) => {
    await twoInstancesOnOneStore(t, tempDir(t));
  });
});
