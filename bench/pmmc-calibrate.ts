/**
 * Calibrates PMMC's bank match (decision 010, "calibrated gate") on the hand-written labelled check in
 * test/fixtures/pmmc-paraphrases.json: the model-free Questioner words each labelled opportunity's bank
 * questions, the Planner's rule gives each its program's search words, and every hand-written paraphrase
 * and unrelated question is matched against that bank. Prints, per channel, where the raw similarity
 * sits for unrelated questions (floor: p90) and for paraphrases (ceiling: median), and how the gate
 * routes with no calibration and with the measured one. No benchmark question is read.
 *
 *   npx tsx bench/pmmc-calibrate.ts                  # hash profile
 *   npx tsx bench/pmmc-calibrate.ts --profile local  # USE-lite sentence vectors
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { checkCalibration, type LabelledEntry } from "../src/compile/bank-calibration.ts";
import { programTerms } from "../src/compile/bank-match.ts";
import { defaultCompileConfig } from "../src/compile/compile-config.ts";
import { type LabelledSet, labelledBank } from "../src/compile/labelled-check.ts";
import { embedTexts } from "../src/models/model-calls.ts";
import { createModels } from "../src/models/profiles.ts";
import { vectorSpaces } from "../src/models/vector-spaces.ts";

const { values } = parseArgs({ options: { profile: { type: "string", default: "hash" } } });
const labelled = JSON.parse(
  readFileSync(join(import.meta.dirname, "../test/fixtures/pmmc-paraphrases.json"), "utf8"),
) as LabelledSet;
const models = await createModels(values.profile);
try {
  const { bank, queries } = await labelledBank(labelled, (texts) => embedTexts(models.text, texts), programTerms);
  const gate = { ...defaultCompileConfig, rrfK: 60 };
  const uncalibrated = checkCalibration(bank as LabelledEntry[], queries, gate, {});
  const calibrated = checkCalibration(bank as LabelledEntry[], queries, gate, uncalibrated.measured);
  const space = vectorSpaces(models).text.name;
  process.stdout.write(
    `${JSON.stringify(
      {
        profile: values.profile,
        bank: bank.length,
        paraphrases: uncalibrated.paraphrases,
        unrelated: uncalibrated.unrelated,
        measured: { bm25: uncalibrated.measured.bm25, [space]: uncalibrated.measured.dense },
        routedUncalibrated: uncalibrated.routed,
        routedCalibrated: calibrated.routed,
        wrongScoreMaxCalibrated: calibrated.wrongScoreMax,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await models.close?.();
}
