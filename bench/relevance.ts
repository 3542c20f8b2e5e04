/**
 * The relevance cut (`minScore`, issue 16 part 6) on LoCoMo: does it empty the packs of questions
 * whose answer is not in the conversation, without taking gold evidence from questions that have one?
 *
 *   CAIRN_DATA=../shared/data npx tsx bench/relevance.ts                  # hash profile; BENCHMARKS.md section
 *   CAIRN_DATA=../shared/data npx tsx bench/relevance.ts --profile local  # the offline models
 *   npx tsx bench/relevance.ts --limit 2 --out /tmp/relevance            # a quick look; BENCHMARKS.md untouched
 *
 * Each history is replayed through the normal write path, then every question is searched once
 * with no cut (`minScore: 0`); each cut is applied to the scores the pack reports, which is exactly
 * what the search does before packing (the budget admits the same items in the same order, minus
 * those cut, so a cut can only let later items in: the loss figures are an upper bound).
 * Adversarial questions (category 5) expect "not mentioned"; their gold turns are the trap.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadDataset, resolveDataDir } from "../src/bench/datasets/index.ts";
import { replayHistory } from "../src/bench/replay.ts";
import { createModels } from "../src/models/profiles.ts";
import { defaultMinScore } from "../src/route/search-config.ts";
import { replaceBenchmarksSection } from "./benchmarks-section.ts";

const { values } = parseArgs({
  options: {
    data: { type: "string" },
    profile: { type: "string", default: "hash" },
    mode: { type: "string", default: "cairn" },
    limit: { type: "string" },
    out: { type: "string" },
  },
});
const cuts = [0, 0.1, 0.2, 0.25, 0.34, 0.5, 0.67, 1];
const dataset = await loadDataset("locomo", resolveDataDir(values.data));
const histories = values.limit ? dataset.histories.slice(0, Number(values.limit)) : dataset.histories;
const models = await createModels(values.profile);
const work = mkdtempSync(join(tmpdir(), "cairn-relevance-"));

interface Asked {
  readonly adversarial: boolean;
  /** Each packed item's relevance and whether it is a gold turn, in pack order. */
  readonly items: readonly { readonly relevance: number; readonly gold: boolean }[];
  readonly goldTurns: number;
}
const asked: Asked[] = [];
const started = performance.now();
try {
  for (const history of histories) {
    const replayed = await replayHistory(history, { models, dir: work });
    try {
      for (const question of history.questions) {
        const pack = await replayed.memory.search(replayed.scope, question.text, {
          minScore: 0,
          mode: values.mode as "cairn",
        });
        const gold = new Set(question.gold.turns);
        asked.push({
          adversarial: question.category === "adversarial",
          items: pack.items.map((item) => ({
            relevance: item.relevance ?? 1,
            gold: gold.has(replayed.idsOf(item.rawNodeId)?.turn ?? ""),
          })),
          goldTurns: gold.size,
        });
      }
    } finally {
      await replayed.memory.close();
    }
    process.stderr.write(`${history.id}: ${asked.length} questions\n`);
  }
} finally {
  await models.close?.();
  rmSync(work, { recursive: true, force: true });
}

const adversarial = asked.filter((question) => question.adversarial);
const answerable = asked.filter((question) => !question.adversarial && question.goldTurns > 0);
const withGold = answerable.filter((question) => question.items.some((item) => item.gold));
const share = (part: number, whole: number) => (whole === 0 ? 0 : part / whole);
const rows = cuts.map((cut) => {
  const kept = (question: Asked) => question.items.filter((item) => item.relevance >= cut);
  const goldKept = (question: Asked) => kept(question).filter((item) => item.gold).length;
  const goldAll = (question: Asked) => question.items.filter((item) => item.gold).length;
  return {
    cut,
    adversarialFlagged: share(adversarial.filter((question) => kept(question).length === 0).length, adversarial.length),
    answerableFlagged: share(answerable.filter((question) => kept(question).length === 0).length, answerable.length),
    goldLost: share(withGold.filter((question) => goldKept(question) === 0).length, withGold.length),
    goldTurnsLost: share(
      withGold.reduce((sum, question) => sum + goldAll(question) - goldKept(question), 0),
      withGold.reduce((sum, question) => sum + goldAll(question), 0),
    ),
    meanItems: asked.reduce((sum, question) => sum + kept(question).length, 0) / asked.length,
  };
});

const percent = (value: number) => `${(value * 100).toFixed(1)}%`;
const command = `CAIRN_DATA=../shared/data npx tsx bench/relevance.ts${values.profile === "hash" ? "" : ` --profile ${values.profile}`}${values.mode === "cairn" ? "" : ` --mode ${values.mode}`}`;
const markdown = [
  `### Relevance cut on LoCoMo (\`minScore\`, ${values.profile} profile)`,
  "",
  `LoCoMo, ${values.profile} profile, \`${values.mode}\` search at the default budget, ${histories.length} histories: ` +
    `${adversarial.length} adversarial questions (answer "not mentioned") and ${answerable.length} answerable ones ` +
    `with gold turns (${withGold.length} of them with gold in the uncut pack). Run: \`${command}\` ` +
    `(${((performance.now() - started) / 1000).toFixed(0)} s, ${new Date().toISOString().slice(0, 16)} UTC).`,
  "",
  "| minScore | adversarial packs flagged empty | answerable packs flagged empty | answerable questions losing all their gold | gold turns lost | mean items per pack |",
  "| ---: | ---: | ---: | ---: | ---: | ---: |",
  ...rows.map(
    (row) =>
      `| ${row.cut}${row.cut === defaultMinScore ? " (default)" : ""} | ${percent(row.adversarialFlagged)} | ${percent(row.answerableFlagged)} | ${percent(row.goldLost)} | ${percent(row.goldTurnsLost)} | ${row.meanItems.toFixed(1)} |`,
  ),
  "",
].join("\n");
process.stdout.write(markdown);

const out = values.out ?? join(import.meta.dirname, "results");
mkdirSync(out, { recursive: true });
const name = `relevance-${values.profile}`;
writeFileSync(join(out, `${name}.json`), `${JSON.stringify({ command, rows, questions: asked.length }, null, 2)}\n`);
writeFileSync(join(out, `${name}.md`), markdown);
if (!values.out && !values.limit)
  replaceBenchmarksSection(`relevance-${values.profile}`, "bench/relevance.ts", markdown);
