import { defaultUnitBudget, type UnitBudget } from "./compilation-unit.ts";

/** Settings of prospective compilation and of routing queries to the bank (DESIGN §4; docs/decisions/010). */
export interface CompileConfig {
  /** Compile each session as it commits (off: `Memory.compile` compiles on demand, e.g. at consolidation). */
  readonly onCommit: boolean;
  /** Lowest normalised bank-match score that runs a program (PMMC α_route). */
  readonly alphaRoute: number;
  /** Lead the best match needs over the runner-up (PMMC δ). */
  readonly margin: number;
  /** Repair rounds after a refused plan (PMMC r). */
  readonly repairRounds: number;
  /** Execute and check programs before banking them (off only for the no-Doubter ablation). */
  readonly verify: boolean;
  /** Programs may hand over original pixels (off only for the no-raw-images ablation). */
  readonly rawImages: boolean;
  /** Evidence opportunities compiled per session. */
  readonly maxOpportunities: number;
  /** Predicted questions kept per opportunity. */
  readonly questionsPerOpportunity: number;
  readonly unit: UnitBudget;
}

export const defaultCompileConfig: CompileConfig = Object.freeze({
  onCommit: false,
  /** PMMC's gate: a normalised score of 0.60 (see decision 010 for what the normalisation makes it mean). */
  alphaRoute: 0.6,
  /** PMMC's margin δ = 0.05 over the runner-up. */
  margin: 0.05,
  /** PMMC's r ≤ 2: the paper measured little gain from a third round at a fifth more compile cost. */
  repairRounds: 2,
  verify: true,
  rawImages: true,
  /** Not measured: enough for a session's few image, naming, update and preference turns. */
  maxOpportunities: 8,
  questionsPerOpportunity: 2,
  unit: defaultUnitBudget,
});
