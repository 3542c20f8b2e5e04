/**
 * Why PMMC's gate does or does not open (issue 12): replays a dataset, compiles every session with the
 * model-free roles (query-blind, before any question is read), then matches every question against
 * the bank exactly as `search({ mode: "compiled" })` does and reports, per question, the channels'
 * similarities and the normalised score of the best match and of the best match whose program rests
 * on gold evidence. Nothing here changes what is banked or routed; it reads the same numbers the gate reads.
 *
 *   CAIRN_DATA=../shared/data npx tsx bench/pmmc-routing.ts --dataset lcmp --limit 3
 *   CAIRN_DATA=../shared/data npx tsx bench/pmmc-routing.ts --dataset mem-gallery --limit 3 --profile local
 *
 * Writes `pmmc-routing-<dataset>-<profile>.json` (every question) to --out (default: a temp folder) and prints a summary.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type DatasetName, loadDataset, resolveDataDir } from "../src/bench/datasets/index.ts";
import { percentile } from "../src/bench/metrics.ts";
import { replayHistory } from "../src/bench/replay.ts";
import { calibrationFor } from "../src/compile/bank-calibration.ts";
import { type BankMatch, matchBank, programTerms, runnerUp } from "../src/compile/bank-match.ts";
import { defaultCompileConfig } from "../src/compile/compile-config.ts";
import { embedImages, embedTexts } from "../src/models/model-calls.ts";
import { createModels } from "../src/models/profiles.ts";
import { vectorSpaces } from "../src/models/vector-spaces.ts";

const { values } = parseArgs({
  options: {
    data: { type: "string" },
    dataset: { type: "string", default: "lcmp" },
    profile: { type: "string", default: "hash" },
    limit: { type: "string" },
    out: { type: "string" },
  },
});
const datasetName = values.dataset as DatasetName;
const limit = values.limit ? Number(values.limit) : undefined;
const dataset = await loadDataset(datasetName, resolveDataDir(values.data), { limit });
const models = await createModels(values.profile);
const work = mkdtempSync(join(tmpdir(), "cairn-pmmc-routing-"));
const config = defaultCompileConfig;

interface Row {
  readonly id: string;
  readonly category: string;
  readonly question: string;
  readonly bankSize: number;
  readonly best: Described | null;
  readonly second: number | null;
  /** The best-ranked match whose program's evidence holds gold (Cover@k's match), with its rank. */
  readonly gold: (Described & { readonly rank: number }) | null;
}
interface Described {
  readonly question: string;
  readonly score: number;
  readonly bm25: number | null;
  readonly dense: number | null;
  readonly image: number | null;
}

const rows: Row[] = [];
try {
  for (const history of dataset.histories) {
    const replayed = await replayHistory(history, { models, dir: work });
    try {
      const { memory, scope } = replayed;
      await memory.compile(scope);
      const bank = await memory.listPrograms(scope, { limit: 100_000 });
      const byId = new Map(bank.map((program) => [program.id, program]));
      const candidates = bank.map((program) => ({
        id: program.id,
        question: program.question,
        terms: programTerms(program.program),
        vector: program.vector,
        imageVector:
          program.imageSpace !== null && program.imageSpace === `image:${models.image?.id}`
            ? program.imageVector
            : null,
      }));
      const vectors = await embedTexts(
        models.text,
        history.questions.map((question) => question.text),
      );
      for (const [index, question] of history.questions.entries()) {
        const { turns, images, sessions } = question.gold;
        const holdsGold = (rawNodeId: string) => {
          const ids = replayed.idsOf(rawNodeId);
          if (!ids) return false;
          if (turns.length > 0) return ids.turn !== null && turns.includes(ids.turn);
          if (images.length > 0) return ids.images.some((image) => images.includes(image));
          return sessions.includes(ids.session);
        };
        const image =
          question.imagePath && models.image
            ? (await embedImages(models.image, [new Uint8Array(await readFile(question.imagePath))]))[0]
            : undefined;
        const matches = matchBank(
          { text: question.text, vector: vectors[index], imageVector: image },
          candidates,
          60,
          calibrationFor(vectorSpaces(models), config),
          config.paraphraseLevel,
        );
        const describe = (match: BankMatch | undefined): Described | null =>
          match
            ? {
                question: byId.get(match.id)?.question ?? "",
                score: match.score,
                bm25: match.channels.bm25?.similarity ?? null,
                dense: match.channels.dense?.similarity ?? null,
                image: match.channels.image?.similarity ?? null,
              }
            : null;
        const goldRank = matches.findIndex((match) => byId.get(match.id)?.evidence.some(holdsGold));
        const gold = goldRank >= 0 ? describe(matches[goldRank]) : null;
        rows.push({
          id: question.id,
          category: question.category,
          question: question.text,
          bankSize: bank.length,
          best: describe(matches[0]),
          second: runnerUp(matches, (id) => byId.get(id)?.evidence)?.score ?? null,
          gold: gold ? { ...gold, rank: goldRank + 1 } : null,
        });
      }
    } finally {
      await replayed.memory.close();
    }
    process.stderr.write(`${history.id}: ${history.questions.length} questions\n`);
  }
} finally {
  await models.close?.();
  rmSync(work, { recursive: true, force: true });
}

const median = (list: readonly number[]) => (list.length === 0 ? null : percentile(list, 0.5));
const numbers = (list: readonly (number | null | undefined)[]) =>
  list.filter((value): value is number => typeof value === "number");
const best = rows.flatMap((row) => (row.best ? [row.best] : []));
const gold = rows.flatMap((row) => (row.gold ? [row.gold] : []));
const fmt = (value: number | null) => (value === null ? "–" : value.toFixed(3));
const summary = {
  dataset: datasetName,
  profile: values.profile,
  limit: limit ?? null,
  questions: rows.length,
  meanBank: rows.reduce((sum, row) => sum + row.bankSize, 0) / Math.max(1, rows.length),
  best: {
    score: median(best.map((match) => match.score)),
    bm25: median(numbers(best.map((match) => match.bm25))),
    dense: median(numbers(best.map((match) => match.dense))),
    image: median(numbers(best.map((match) => match.image))),
    withImage: best.filter((match) => match.image !== null).length,
    passesGate: best.filter((match) => match.score >= config.alphaRoute).length / Math.max(1, rows.length),
    passesGateAndMargin:
      rows.filter(
        (row) => row.best && row.best.score >= config.alphaRoute && row.best.score - (row.second ?? 0) >= config.margin,
      ).length / Math.max(1, rows.length),
    margin: median(rows.flatMap((row) => (row.best ? [row.best.score - (row.second ?? 0)] : []))),
  },
  gold: {
    covered: gold.length / Math.max(1, rows.length),
    cover5: gold.filter((match) => match.rank <= 5).length / Math.max(1, rows.length),
    rankMedian: median(gold.map((match) => match.rank)),
    score: median(gold.map((match) => match.score)),
    bm25: median(numbers(gold.map((match) => match.bm25))),
    dense: median(numbers(gold.map((match) => match.dense))),
    image: median(numbers(gold.map((match) => match.image))),
  },
};
process.stdout.write(
  [
    `${datasetName} (${values.profile}${limit ? `, --limit ${limit}` : ""}): ${rows.length} questions, mean bank ${summary.meanBank.toFixed(0)}`,
    `best match: score p50 ${fmt(summary.best.score)}, bm25 ${fmt(summary.best.bm25)}, dense ${fmt(summary.best.dense)}, image ${fmt(summary.best.image)} (${summary.best.withImage} with a query image), margin p50 ${fmt(summary.best.margin)}; ≥ α ${(100 * summary.best.passesGate).toFixed(1)}%, ≥ α and δ ${(100 * summary.best.passesGateAndMargin).toFixed(1)}%`,
    `best gold match: in bank for ${(100 * summary.gold.covered).toFixed(1)}%, top-5 ${(100 * summary.gold.cover5).toFixed(1)}%, rank p50 ${fmt(summary.gold.rankMedian)}, score p50 ${fmt(summary.gold.score)}, bm25 ${fmt(summary.gold.bm25)}, dense ${fmt(summary.gold.dense)}, image ${fmt(summary.gold.image)}`,
    "",
  ].join("\n"),
);
const out = values.out ?? mkdtempSync(join(tmpdir(), "pmmc-routing-"));
mkdirSync(out, { recursive: true });
const file = join(out, `pmmc-routing-${datasetName}-${values.profile}.json`);
writeFileSync(file, `${JSON.stringify({ summary, rows }, null, 2)}\n`);
process.stderr.write(`wrote ${file}\n`);
