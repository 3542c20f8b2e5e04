import { assemblePack } from "../../evidence/assemble-pack.ts";
import { type Budget, defaultBudget } from "../../evidence/budget.ts";
import type { BenchMethod } from "../method.ts";
import { fromPack } from "./search-method.ts";

const unlimited: Budget = Object.freeze({
  pages: Number.MAX_SAFE_INTEGER,
  rawNodes: Number.MAX_SAFE_INTEGER,
  images: Number.MAX_SAFE_INTEGER,
  textTokens: Number.MAX_SAFE_INTEGER,
});

/** Everything, in order: the reader gets the whole history. Recall is the ceiling; tokens are the cost. */
export const fullContext: BenchMethod = {
  name: "full-context",
  description: "the whole history in time order, no budget (tokens and images counted)",
  async retrieve(context) {
    const ranked = context.timeline.map((node) => ({ id: node.id, score: 0, channels: {} }));
    return fromPack({ ...assemblePack(ranked, context.nodes, unlimited, { vision: true }), warnings: [] });
  },
};

/** The most recent raw nodes that fit the budget: what a sliding context window keeps. */
export const recencyWindow: BenchMethod = {
  name: "recency",
  description: "the latest raw nodes that fit the budget (a sliding window)",
  async retrieve(context) {
    const ranked = [...context.timeline].reverse().map((node) => ({ id: node.id, score: 0, channels: {} }));
    const budget = context.budget ?? defaultBudget;
    return fromPack({ ...assemblePack(ranked, context.nodes, budget, { vision: true }), warnings: [] });
  },
};
