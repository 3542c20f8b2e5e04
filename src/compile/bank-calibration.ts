import type { VectorSpaces } from "../models/vector-spaces.ts";
import {
  type BankCandidate,
  type ChannelCalibration,
  type MatchCalibration,
  matchBank,
  runnerUp,
} from "./bank-match.ts";
import type { CompileConfig } from "./compile-config.ts";

/**
 * Per-channel calibration of the bank match, keyed by channel ("bm25") or vector space name
 * ("text:<model>", "image:<model>"), measured by `bench/pmmc-calibrate.ts` on the hand-written labelled
 * check in test/fixtures/pmmc-paraphrases.json (decision 010, amendment "calibrated gate"): `floor` is
 * the 90th percentile of a channel's similarity between a question and an unrelated banked question,
 * `ceiling` the median similarity between a paraphrase and its own banked question (which then reads
 * `paraphraseLevel`). A text space not in the table is read uncalibrated (floor 0, ceiling 1); the image
 * channel, which has no labelled set, takes the bank's background similarity as its floor (bank-match.ts).
 */
export const measuredCalibration: Readonly<Record<string, ChannelCalibration>> = Object.freeze({
  // `npx tsx bench/pmmc-calibrate.ts` (2026-12-01): 56 banked wordings, 24 paraphrases, 6 unrelated questions.
  bm25: { floor: 0, ceiling: 0.6 },
  "text:hash-ngram-256": { floor: 0.451, ceiling: 0.538 },
  // `npx tsx bench/pmmc-calibrate.ts --profile local`, same set.
  "text:use-lite-512": { floor: 0.548, ceiling: 0.822 },
});

/** The calibration matchBank reads for these spaces: bm25 always, dense and image by their space. */
export function calibrationFor(spaces: VectorSpaces, config: Pick<CompileConfig, "calibration">): MatchCalibration {
  const table = config.calibration;
  const dense = table[spaces.text.name];
  const image = spaces.image ? table[spaces.image.name] : undefined;
  return {
    ...(table.bm25 ? { bm25: table.bm25 } : {}),
    ...(dense ? { dense } : {}),
    ...(image ? { image } : {}),
  };
}

/** One labelled query: its text and vector, and the prediction it paraphrases (null: unrelated to all). */
export interface LabelledQuery {
  readonly text: string;
  readonly vector: Float32Array | undefined;
  readonly owner: string | null;
}

/** A banked question of the labelled check, with the prediction (evidence) it rests on. */
export interface LabelledEntry extends BankCandidate {
  readonly owner: string;
}

export interface CalibrationCheck {
  /** Measured per channel: floor (p90 of unrelated best similarity) and ceiling (median own similarity). */
  readonly measured: Partial<Record<"bm25" | "dense", ChannelCalibration>>;
  /** With `calibration`: paraphrases routed to their own prediction, to another, or not at all; unrelated routed. */
  readonly routed: { readonly own: number; readonly other: number; readonly none: number; readonly unrelated: number };
  readonly paraphrases: number;
  readonly unrelated: number;
  /** The highest calibrated score a query gave a prediction it does not paraphrase: what a wrong match reaches. */
  readonly wrongScoreMax: number;
}

/**
 * The labelled check behind the table above: matches each labelled query against the labelled bank,
 * measures where each channel's similarity sits for its own prediction and for the others, and says
 * how the gate (α_route, δ over other evidence) routes under a given calibration.
 */
export function checkCalibration(
  bank: readonly LabelledEntry[],
  queries: readonly LabelledQuery[],
  gate: {
    readonly alphaRoute: number;
    readonly margin: number;
    readonly rrfK: number;
    readonly paraphraseLevel: number;
  },
  calibration: MatchCalibration,
): CalibrationCheck {
  const own: Record<"bm25" | "dense", number[]> = { bm25: [], dense: [] };
  const other: Record<"bm25" | "dense", number[]> = { bm25: [], dense: [] };
  const ownerOf = new Map(bank.map((entry) => [entry.id, entry.owner]));
  const routed = { own: 0, other: 0, none: 0, unrelated: 0 };
  let wrongScoreMax = 0;
  for (const query of queries) {
    const raw = matchBank({ text: query.text, vector: query.vector, imageVector: undefined }, bank, gate.rrfK);
    for (const channel of ["bm25", "dense"] as const) {
      const best = (mine: boolean) =>
        Math.max(
          0,
          ...raw
            .filter((match) => (ownerOf.get(match.id) === query.owner) === mine)
            .map((match) => match.channels[channel]?.similarity ?? 0),
        );
      if (query.owner !== null) own[channel].push(best(true));
      other[channel].push(best(false));
    }
    const matches = matchBank(
      { text: query.text, vector: query.vector, imageVector: undefined },
      bank,
      gate.rrfK,
      calibration,
      gate.paraphraseLevel,
    );
    const best = matches[0];
    const second = runnerUp(matches, (id) => [ownerOf.get(id) ?? id]);
    const wrong = matches.find((match) => ownerOf.get(match.id) !== query.owner);
    wrongScoreMax = Math.max(wrongScoreMax, wrong?.score ?? 0);
    const passes =
      best !== undefined && best.score >= gate.alphaRoute && best.score - (second?.score ?? 0) >= gate.margin;
    if (query.owner === null) routed.unrelated += passes ? 1 : 0;
    else if (!passes) routed.none++;
    else if (ownerOf.get(best.id) === query.owner) routed.own++;
    else routed.other++;
  }
  const measure = (channel: "bm25" | "dense"): ChannelCalibration | undefined =>
    own[channel].length === 0
      ? undefined
      : { floor: quantile(other[channel], 0.9), ceiling: quantile(own[channel], 0.5) };
  const measured: CalibrationCheck["measured"] = {};
  for (const channel of ["bm25", "dense"] as const) {
    const value = measure(channel);
    if (value && queries.some((query) => channel === "bm25" || query.vector)) measured[channel] = value;
  }
  return {
    measured,
    routed,
    wrongScoreMax,
    paraphrases: queries.filter((query) => query.owner !== null).length,
    unrelated: queries.filter((query) => query.owner === null).length,
  };
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1) + 0.5))] ?? 0;
}
