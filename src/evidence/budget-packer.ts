import type { Budget } from "./budget.ts";

export interface PackCandidate {
  readonly id: string;
  readonly textTokens: number;
  /** Image hashes this candidate would bring; a hash already in the pack costs nothing. */
  readonly images: readonly string[];
}

export type BudgetDimension = "pages" | "rawNodes" | "images" | "textTokens";

export interface PackDecision {
  readonly id: string;
  /** Images of this candidate that made it into the pack. */
  readonly images: readonly string[];
  /** Images dropped because the image budget ran out (the text still counts). */
  readonly imagesCut: readonly string[];
}

export interface PackResult {
  readonly selected: readonly PackDecision[];
  readonly cut: readonly { readonly id: string; readonly dimension: BudgetDimension }[];
  readonly used: Readonly<Record<BudgetDimension, number>>;
  /** How many items each dimension turned away (an image counts once per image). */
  readonly cutCounts: Readonly<Record<BudgetDimension, number>>;
}

/**
 * Greedy packing in relevance order under a hard joint budget. A candidate whose text does not
 * fit is skipped (a later, shorter one may still fit); images beyond the image budget are dropped
 * from an otherwise admitted candidate. No dimension is ever exceeded.
 */
export function packBudget(candidates: readonly PackCandidate[], budget: Budget): PackResult {
  // Pages are charged by routing, not here.
  const used = { pages: 0, rawNodes: 0, images: 0, textTokens: 0 };
  const cutCounts = { pages: 0, rawNodes: 0, images: 0, textTokens: 0 };
  const selected: PackDecision[] = [];
  const cut: { id: string; dimension: BudgetDimension }[] = [];
  const imagesInPack = new Set<string>();
  for (const candidate of candidates) {
    if (used.rawNodes + 1 > budget.rawNodes) {
      cut.push({ id: candidate.id, dimension: "rawNodes" });
      cutCounts.rawNodes++;
      continue;
    }
    if (used.textTokens + candidate.textTokens > budget.textTokens) {
      cut.push({ id: candidate.id, dimension: "textTokens" });
      cutCounts.textTokens++;
      continue;
    }
    const images: string[] = [];
    const imagesCut: string[] = [];
    for (const hash of new Set(candidate.images)) {
      if (imagesInPack.has(hash)) {
        images.push(hash);
      } else if (used.images + 1 <= budget.images) {
        imagesInPack.add(hash);
        used.images++;
        images.push(hash);
      } else {
        imagesCut.push(hash);
        cutCounts.images++;
      }
    }
    used.rawNodes++;
    used.textTokens += candidate.textTokens;
    selected.push({ id: candidate.id, images, imagesCut });
  }
  return { selected, cut, used, cutCounts };
}
