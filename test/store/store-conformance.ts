import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Store } from "../../src/store/store.ts";
import { activeIndexConformance } from "./active-index-conformance.ts";
import { channelIndexConformance } from "./channel-index-conformance.ts";
import { coldStoreConformance } from "./cold-store-conformance.ts";
import {
  type ConformanceGroup,
  type MakeStore,
  SeamCoverage,
  type StoreConformanceOptions,
  seamMethodNames,
  seamMethods,
} from "./conformance-support.ts";
import { questionBankConformance } from "./question-bank-conformance.ts";
import { transferConformance } from "./transfer-conformance.ts";

export { buildSessionWrite, spaces } from "./conformance-support.ts";
export type { MakeStore, StoreConformanceOptions };

/**
 * One conformance suite for the `Store` seam, written against `Store` / `ScopedStore` only, so
 * every backend (SQLite today, Postgres next) answers the same questions the same way: one file
 * per group of the seam (cold store, channel index, active index), run as one describe block
 * each, then a last case that every method of the seam was called during the run.
 *
 * @example
 * runStoreConformance("sqlite", async (t) => SqliteStore.open({ path: tempDir(t) }), {
 *   skip: { "vector search ranks by cosine similarity, best first, within the limit": "no vector extension on this server" },
 * });
 */
export function runStoreConformance(name: string, makeStore: MakeStore, options: StoreConformanceOptions = {}): void {
  const groups: readonly ConformanceGroup[] = [
    coldStoreConformance,
    channelIndexConformance,
    activeIndexConformance,
    questionBankConformance,
    transferConformance,
  ];
  const caseNames = groups.flatMap((group) => group.cases.map((testCase) => testCase.name));
  const duplicate = caseNames.find((caseName, index) => caseNames.indexOf(caseName) !== index);
  if (duplicate) throw new Error(`store conformance: two cases are named "${duplicate}"`);
  const known = new Set(caseNames);
  for (const key of [...Object.keys(options.skip ?? {}), ...Object.keys(options.todo ?? {})]) {
    if (!known.has(key)) throw new Error(`store conformance: no case named "${key}" to skip or mark todo`);
  }
  const flags = (caseName: string) => {
    const skip = options.skip?.[caseName];
    const todo = options.todo?.[caseName];
    return { ...(skip ? { skip } : {}), ...(todo ? { todo } : {}) };
  };

  const coverage = new SeamCoverage();
  for (const group of groups) {
    describe(`Store conformance (${group.name}): ${name}`, () => {
      for (const testCase of group.cases) {
        it(testCase.name, flags(testCase.name), async (t) => {
          coverage.ran(testCase.name);
          const stores = [coverage.wrap(await makeStore(t))];
          const another = async () => {
            const store = coverage.wrap(await makeStore(t));
            stores.push(store);
            return store;
          };
          try {
            await testCase.run(stores[0] as Store, t, another);
          } finally {
            for (const store of stores) await store.close();
          }
        });
      }
    });
  }

  // Registered last, so it runs after every case above (node:test runs them in order, one at a time).
  describe(`Store conformance (seam coverage): ${name}`, () => {
    it("every method of the seam was called, and no call asked for a negative limit", (t) => {
      const expected = caseNames.filter((caseName) => !options.skip?.[caseName]);
      const ran = coverage.casesRun();
      if (expected.some((caseName) => !ran.has(caseName))) {
        t.skip(`only ${ran.size} of ${expected.length} cases ran (a name filter?): coverage needs the whole run`);
        return;
      }
      const uncovered = seamMethodNames
        .filter((method) => coverage.calls(method) === 0)
        .map((method) => `${method} (${seamMethods[method]})`);
      assert.deepEqual(uncovered, [], "seam methods no conformance case called");
      assert.deepEqual(coverage.badLimits(), [], `"all" is an absent limit, never a negative one`);
    });
  });
}
