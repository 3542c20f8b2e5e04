/**
 * Context managers (VERA, issue 15) without an LLM: rendering fidelity and evidence retention.
 *
 *   npm run bench:context                                   # full run: all datasets and managers, OCR on; updates BENCHMARKS.md
 *   npm run bench:context -- --dataset lcmp --limit 5 --out /tmp/ctx   # a slice; never touches BENCHMARKS.md
 *   (--no-fidelity skips part (a); --no-ocr counts a turn on a kept page as present without reading it back)
 *   CAIRN_OPENAI_BASE_URL=… CAIRN_OPENAI_CHAT_MODEL=… npm run bench:context -- --answer   # adds (c), answer accuracy
 *
 * (a) Fidelity: the first LoCoMo conversation rendered at 0.5×–1.0×, `--pages` pages per scale read back by
 *     tesseract (the local OCR reader), word recall beside image tokens per page under each rule.
 * (b) Retention: each dataset replayed as one long trajectory through every manager (budget: 128k window, 64k
 *     trigger, 8 recent messages, OpenAI tile accounting), each assistant message one model call; at each question's
 *     time the share of its gold turns present (native text, summary, or rendered page that OCR reads back) and of
 *     its gold images present as native images, beside cumulative non-cache tokens.
 * Writes `<out>/context-results.json`, `<out>/context.md` and SVG plots.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { createContextAnswerJudge } from "../src/bench/context/context-answer.ts";
import { presentShare, replayRetention } from "../src/bench/context/context-replay.ts";
import { type BudgetedResult, renderMarkdown, writePlots } from "../src/bench/context/context-report.ts";
import { datasetTrajectory } from "../src/bench/context/dataset-trajectory.ts";
import { type FidelityRow, measureFidelity } from "../src/bench/context/fidelity.ts";
import { type DatasetName, datasetNames, loadDataset, resolveDataDir } from "../src/bench/datasets/index.ts";
import { type ContextBudget, defaultContextBudget, managerNames } from "../src/context/context-manager.ts";
import { imageTokenRuleNamed } from "../src/context/image-tokens.ts";
import { managerNamed } from "../src/context/managers/index.ts";
import { defaultRenderSettings } from "../src/context/render/page-layout.ts";
import { createLocalOcrReader } from "../src/models/local-provider.ts";
import { createEndpointChat } from "../src/models/profiles.ts";

/** The section of BENCHMARKS.md a full run rewrites. */
const start = "<!-- context-managers:start (npm run bench:context rewrites this section) -->";
const end = "<!-- context-managers:end -->";

const { values } = parseArgs({
  options: {
    dataset: { type: "string", default: datasetNames.join(",") },
    manager: { type: "string", default: managerNames.join(",") },
    limit: { type: "string" },
    out: { type: "string" },
    data: { type: "string" },
    pages: { type: "string", default: "3" },
    "no-ocr": { type: "boolean", default: false },
    "no-fidelity": { type: "boolean", default: false },
    "image-tokens": { type: "string", default: "openai-tile" },
    budgets: { type: "string", default: "paper,tight" },
    answer: { type: "boolean", default: false },
  },
});

/**
 * Two fixed budgets, the same for every dataset: VERA's (a 128k window managed from 64k) and a tight one (16k from 8k)
 * under which every dataset's own histories outgrow the trigger, so the managers differ on what they keep.
 */
const budgetSettings: Readonly<Record<string, ContextBudget>> = {
  paper: defaultContextBudget,
  tight: { ...defaultContextBudget, window: 16_000, trigger: 8_000 },
};

// A run that leaves out a part of the section (fidelity) or of the data never rewrites BENCHMARKS.md.
const partial = values.limit !== undefined || values.out !== undefined || values["no-fidelity"] === true;
const out = values.out ?? "bench/results/context";
const datasets = (values.dataset ?? "").split(",").filter(Boolean) as DatasetName[];
const managers = (values.manager ?? "").split(",").filter(Boolean);
const limit = values.limit === undefined ? undefined : Number(values.limit);
const imageRule = imageTokenRuleNamed(values["image-tokens"] ?? "openai-tile", "--image-tokens");
const dataDir = resolveDataDir(values.data);
const ocrReader = createLocalOcrReader();
const ocr = values["no-ocr"] ? undefined : ocrReader.reader;
// Part (c): answers from the working context by CAIRN_OPENAI_CHAT_MODEL, judged by CAIRN_OPENAI_JUDGE_MODEL (or the same).
const answerer = values.answer ? await createEndpointChat("CAIRN_OPENAI_CHAT_MODEL") : undefined;
const judgeChat =
  answerer && process.env.CAIRN_OPENAI_JUDGE_MODEL ? await createEndpointChat("CAIRN_OPENAI_JUDGE_MODEL") : answerer;
const answer =
  answerer && judgeChat ? createContextAnswerJudge({ answerer: answerer.chat, judge: judgeChat.chat }) : undefined;
const started = Date.now();
const log = (line: string) => console.error(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${line}`);

let fidelity: FidelityRow[] = [];
try {
  if (!values["no-fidelity"]) {
    const locomo = await loadDataset("locomo", dataDir, { limit: 1 });
    const first = await datasetTrajectory(locomo);
    log("fidelity: rendering and reading back LoCoMo conversation 1");
    fidelity = await measureFidelity(first.trajectory.messages, ocrReader.reader, { pages: Number(values.pages) });
    for (const row of fidelity)
      log(`  scale ${row.scale}: recall ${row.wordRecall.toFixed(3)}, ${row.imageTokens.openaiTile} tile tokens/page`);
  }
  const retention: BudgetedResult[] = [];
  for (const name of datasets) {
    const dataset = await loadDataset(name, dataDir, limit === undefined ? {} : { limit });
    const replay = await datasetTrajectory(dataset);
    log(`${name}: ${replay.trajectory.messages.length} messages, ${replay.checkpoints.length} checkpoints`);
    for (const budgetName of (values.budgets ?? "").split(",").filter(Boolean)) {
      const budget = budgetSettings[budgetName];
      if (budget === undefined) {
        throw new Error(`unknown budget ${budgetName}; expected ${Object.keys(budgetSettings).join(", ")}`);
      }
      for (const managerName of managers) {
        const options = {
          budget,
          imageRule,
          render: defaultRenderSettings,
          ...(ocr ? { ocr } : {}),
          ...(answer ? { answer } : {}),
        };
        const result = { ...(await replayRetention(replay, managerNamed(managerName), options)), budgetName };
        retention.push(result);
        log(
          `  ${budgetName} ${managerName}: retention ${result.turnRetention.toFixed(3)}, images native ${result.imageNative.toFixed(3)}, ${result.tokens.nonCache} non-cache tokens, ${result.triggers} triggers, ${result.pagesRead} pages OCR'd`,
        );
      }
    }
  }
  await mkdir(out, { recursive: true });
  const command = `npm run bench:context${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`;
  const run = {
    command,
    date: new Date().toISOString(),
    node: process.version,
    budgets: budgetSettings,
    imageRule,
    render: defaultRenderSettings,
    presentShare,
    seconds: Math.round((Date.now() - started) / 1000),
  };
  await writeFile(path.join(out, "context-results.json"), `${JSON.stringify({ run, fidelity, retention }, null, 2)}\n`);
  const plots = await writePlots(out, fidelity, retention);
  const markdown = renderMarkdown(
    run,
    fidelity,
    retention,
    plots.map((plot) => path.posix.join(path.relative(".", out), plot)),
  );
  await writeFile(path.join(out, "context.md"), markdown);
  if (!partial) await updateBenchmarks(markdown);
  log(`wrote ${out}${partial ? " (a partial run: BENCHMARKS.md untouched)" : " and BENCHMARKS.md"}`);
} finally {
  await ocrReader.close();
  await answerer?.close();
  if (judgeChat !== answerer) await judgeChat?.close();
}

async function updateBenchmarks(section: string): Promise<void> {
  const file = "BENCHMARKS.md";
  const existing = await readFile(file, "utf8");
  const block = `${start}\n${section.replace(/^# /m, "## ")}\n${end}`;
  const from = existing.indexOf(start);
  const to = existing.indexOf(end);
  const next =
    from >= 0 && to > from
      ? `${existing.slice(0, from)}${block}${existing.slice(to + end.length)}`
      : `${existing.trimEnd()}\n\n${block}\n`;
  await writeFile(file, next);
}
