import { measuredCalibration } from "./bank-calibration.ts";
import type { ChannelCalibration } from "./bank-match.ts";
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
  /**
   * Where each match channel's similarity sits for an unrelated and for a paraphrased question, by
   * channel ("bm25") or vector space ("text:<model>"): what makes α_route read on one scale whatever the
   * embedder (bench/pmmc-calibrate.ts measures it; decision 010). A space not named is read uncalibrated.
   */
  readonly calibration: Readonly<Record<string, ChannelCalibration>>;
  /**
   * What a channel similarity at its calibrated ceiling (the median paraphrase of the labelled check)
   * reads on the gate's scale: above α_route, so a typical paraphrase ranked first everywhere routes,
   * below 1, so an exact wording still leads a paraphrase (decision 010, "calibrated gate").
   */
  readonly paraphraseLevel: number;
  /**
   * Below the gate, fuse the best program's evidence into the default search's ranking instead of
   * dropping it (off: the paper's all-or-nothing gate; on: the `pmmc-fused` method, decision 010).
   */
  readonly fuseBelowGate: boolean;
  /**
   * With `fuseBelowGate`: the lowest score whose program is fused. A match no stronger than a wrong one
   * is noise in the default search's ranking; the default is the highest score any paraphrase gave
   * another prediction on the labelled check (bench/pmmc-calibrate.ts, `wrongScoreMax`).
   */
  readonly fuseFloor: number;
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
  /** Wordings of each predicted question banked (issue 12: users word a question many ways; see decision 010). */
  questionsPerOpportunity: 4,
  unit: defaultUnitBudget,
  calibration: measuredCalibration,
  /** Measured: on the labelled check 0.9 routed the most paraphrases with none routed wrongly (hash and local). */
  paraphraseLevel: 0.9,
  fuseBelowGate: false,
  /** Measured: 0.443 (hash) on the labelled check; see decision 010, "calibrated gate". */
  fuseFloor: 0.45,
});
