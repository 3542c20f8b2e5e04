import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { checkCalibration, measuredCalibration } from "../../src/compile/bank-calibration.ts";
import { programTerms, runnerUp } from "../../src/compile/bank-match.ts";
import { defaultCompileConfig } from "../../src/compile/compile-config.ts";
import { type LabelledSet, labelledBank } from "../../src/compile/labelled-check.ts";
import { embedTexts } from "../../src/models/model-calls.ts";
import { createModels } from "../../src/models/profiles.ts";

const labelled = JSON.parse(
  readFileSync(join(import.meta.dirname, "../fixtures/pmmc-paraphrases.json"), "utf8"),
) as LabelledSet;
const gate = { ...defaultCompileConfig, rrfK: 60 };

describe("the bank match's calibration (hand-written labelled check, hash profile)", () => {
  it("routes most paraphrases of the model-free questions to their own prediction, none elsewhere", async () => {
    const models = await createModels("hash");
    const { bank, queries } = await labelledBank(labelled, (texts) => embedTexts(models.text, texts), programTerms);
    const raw = checkCalibration(bank, queries, gate, {});
    const calibrated = checkCalibration(bank, queries, gate, {
      bm25: measuredCalibration.bm25,
      dense: measuredCalibration[`text:${models.text.id}`],
    });
    assert.equal(calibrated.routed.other, 0, "no paraphrase runs another prediction's program");
    assert.equal(calibrated.routed.unrelated, 0, "no unrelated question runs a program");
    assert.ok(
      calibrated.routed.own >= 0.6 * calibrated.paraphrases,
      `routed ${calibrated.routed.own} of ${calibrated.paraphrases}`,
    );
    assert.ok(calibrated.routed.own > raw.routed.own, "calibration routes more than the raw similarities");
  });

  it("keeps the shipped table at what the labelled check measures (re-run bench/pmmc-calibrate.ts after changing it)", async () => {
    const models = await createModels("hash");
    const { bank, queries } = await labelledBank(labelled, (texts) => embedTexts(models.text, texts), programTerms);
    const { measured } = checkCalibration(bank, queries, gate, {});
    const shipped = { bm25: measuredCalibration.bm25, dense: measuredCalibration[`text:${models.text.id}`] };
    for (const channel of ["bm25", "dense"] as const) {
      const [now, table] = [measured[channel], shipped[channel]];
      assert.ok(now && table, channel);
      assert.ok(Math.abs(now.floor - table.floor) < 0.01, `${channel} floor ${now.floor} vs ${table.floor}`);
      assert.ok(Math.abs(now.ceiling - table.ceiling) < 0.01, `${channel} ceiling ${now.ceiling} vs ${table.ceiling}`);
    }
  });

  it("measures δ against other evidence: two wordings of one prediction are not rivals", () => {
    const evidence: Record<string, string[]> = { a1: ["n1"], a2: ["n1"], b: ["n2"] };
    const matches = [
      { id: "a1", score: 0.9 },
      { id: "a2", score: 0.89 },
      { id: "b", score: 0.4 },
    ];
    assert.equal(runnerUp(matches, (id) => evidence[id])?.id, "b");
    assert.equal(
      runnerUp(matches.slice(0, 2), (id) => evidence[id]),
      undefined,
    );
  });
});
