import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RouteVia } from "../../src/evidence/route-trace.ts";
import { latestFirstWithinChains } from "../../src/route/pack-order.ts";
import { latestFirst } from "../../src/route/routed-search.ts";
import type { Route } from "../../src/route/router.ts";

/** A route where `old` is an earlier state reached through chain `c`, whose latest state is `new`. */
function route(nodes: Record<string, { head: string; via: RouteVia }>): Route {
  return {
    nodes: new Map(
      Object.entries(nodes).map(([id, { head, via }]) => [
        id,
        { entry: `${head}-${via}`, head, score: 1, via, latest: via !== "earlier-state" },
      ]),
    ),
    trace: undefined as unknown as Route["trace"],
    pagesRead: 0,
    pagesCut: 0,
  };
}

describe("pack order", () => {
  const chain = route({
    old: { head: "c", via: "earlier-state" },
    a: { head: "x", via: "entry" },
    b: { head: "y", via: "entry" },
    new: { head: "c", via: "entry" },
  });
  const relevance = ["old", "a", "b", "new", "d"];

  it("keeps relevance order and puts the latest state first only within its chain's positions", () => {
    assert.deepEqual(
      latestFirstWithinChains(relevance, (id) => id, chain),
      ["new", "a", "b", "old", "d"],
      "unrelated evidence keeps the rank relevance gave it",
    );
  });

  it("leaves a pack alone when no earlier state comes before its latest state", () => {
    const ordered = ["new", "a", "old", "b"];
    assert.deepEqual(
      latestFirstWithinChains(ordered, (id) => id, chain),
      ordered,
    );
    const lone = route({ old: { head: "c", via: "earlier-state" } });
    assert.deepEqual(
      latestFirstWithinChains(["old", "a"], (id) => id, lone),
      ["old", "a"],
    );
  });

  it("differs from holding earlier states back, which moves everything in between", () => {
    assert.deepEqual(
      latestFirst(relevance, (id) => id, chain),
      ["a", "b", "new", "old", "d"],
    );
  });
});
