import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { checkInvariantsProperty, sqlitePropertyStore } from "../support/invariants-property.ts";

/** The invariants property (`test/support/invariants-property.ts`) on the SQLite store, 30 runs. */
describe("invariants hold over random operation sequences", () => {
  it("raw data immutable, scopes isolated, rejected writes change nothing, forgotten data gone", async () => {
    await checkInvariantsProperty({
      numRuns: 30,
      open: async () => {
        const root = mkdtempSync(join(tmpdir(), "cairn-property-"));
        const store = sqlitePropertyStore(join(root, "store"));
        return { ...store, dispose: async () => rmSync(root, { recursive: true, force: true }) };
      },
    });
  });
});
