/**
 * Context managers (VERA, issue 15) without an LLM: rendering fidelity and evidence retention.
 *
 *   npm run bench:context                                   # full run: all datasets and managers, OCR on; updates BENCHMARKS.md
 *   npm run bench:context -- --dataset lcmp --limit 5 --out /tmp/ctx   # a slice; never touches BENCHMARKS.md
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
import { presentShare, type RetentionResult, replayRetention } from "../src/bench/context/context-replay.ts";
import { datasetTrajectory } from "../src/bench/context/dataset-trajectory.ts";
import { type FidelityRow, measureFidelity } from "../src/bench/context/fidelity.ts";
import { type DatasetName, datasetNames, loadDataset, resolveDataDir } from "../src/bench/datasets/index.ts";
import { renderSvg } from "../src/bench/report/plots.ts";
import { type ContextBudget, defaultContextBudget, managerNames } from "../src/context/context-manager.ts";
import { imageTokenRuleNamed } from "../src/context/image-tokens.ts";
import { managerNamed } from "../src/context/managers/index.ts";
import { defaultRenderSettings } from "../src/context/render/page-layout.ts";
import { createLocalOcrReader } from "../src/models/local-provider.ts";

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
    "image-tokens": { type: "string", default: "openai-tile" },
    budgets: { type: "string", default: "paper,tight" },
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

const partial = values.limit !== undefined || values.out !== undefined;
const out = values.out ?? "bench/results/context";
const datasets = (values.dataset ?? "").split(",").filter(Boolean) as DatasetName[];
const managers = (values.manager ?? "").split(",").filter(Boolean);
const limit = values.limit === undefined ? undefined : Number(values.limit);
const imageRule = imageTokenRuleNamed(values["image-tokens"] ?? "openai-tile", "--image-tokens");
const dataDir = resolveDataDir(values.data);
const ocrReader = createLocalOcrReader();
const ocr = values["no-ocr"] ? undefined : ocrReader.reader;
const started = Date.now();
const log = (line: string) => console.error(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${line}`);

let fidelity: FidelityRow[] = [];
try {
  const locomo = await loadDataset("locomo", dataDir, { limit: 1 });
  const first = await datasetTrajectory(locomo);
  log("fidelity: rendering and reading back LoCoMo conversation 1");
  fidelity = await measureFidelity(first.trajectory.messages, ocrReader.reader, { pages: Number(values.pages) });
  for (const row of fidelity)
    log(`  scale ${row.scale}: recall ${row.wordRecall.toFixed(3)}, ${row.imageTokens.openaiTile} tile tokens/page`);
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
        const options = { budget, imageRule, render: defaultRenderSettings, ...(ocr ? { ocr } : {}) };
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
}

type BudgetedResult = RetentionResult & { readonly budgetName: string };

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

function fixed(value: number, digits = 3): string {
  return value.toFixed(digits);
}

function renderMarkdown(
  run: { command: string; date: string; node: string; seconds: number },
  fidelity: readonly FidelityRow[],
  retention: readonly BudgetedResult[],
  plots: readonly string[],
): string {
  const lines = [
    "# Context managers (VERA)",
    "",
    `Measured without an LLM by \`${run.command}\` on ${run.date.slice(0, 10)} (Node ${run.node}, ${run.seconds} s, 2 shared cores).`,
    "Budgets: `paper` = 128k-token window managed from 64k, `tight` = 16k managed from 8k; both keep the 8 newest messages",
    "native and let a manager's representation of older history fill at most half the trigger; images costed by OpenAI tile rules;",
    "pages at 0.75× (750×1050 px, 16 px DejaVu Sans Mono at scale 1), at most 10 per call. Each dataset is one long",
    "trajectory (its histories back to back); every assistant message is one model call whose input is the working context",
    "before it. A question is asked at the end of its history (LCMP: of its concept), and scored on the working context then.",
    `A gold turn is present if its message is native, or if ≥ ${presentShare} of its content words are in the summary or on`,
    retention.every((row) => row.ocrVerified)
      ? "a kept rendered page whose OCR'd text holds them; a gold image counts only as a native image."
      : "a kept rendered page (this run did not OCR the retention pages (`--no-ocr`): the fidelity table is the evidence that they read back); a gold image counts only as a native image.",
    "",
    "## Fidelity (OCR read-back of rendered pages, LoCoMo conversation 1)",
    "",
    "| scale | page px | pages | word recall | image tokens / page (OpenAI tile · 28-px patch · w·h/750) | text tokens / page |",
    "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ...fidelity.map(
      (row) =>
        `| ${row.scale} | ${row.pageWidth}×${row.pageHeight} | ${row.pages} | ${fixed(row.wordRecall)} | ${row.imageTokens.openaiTile} · ${row.imageTokens.patch} · ${row.imageTokens.area} | ${row.textTokensPerPage} |`,
    ),
    "",
    "## Evidence retention and cumulative tokens",
    "",
    "| dataset | budget | manager | role | calls | triggers | non-cache tokens | vs none | mean / max context | gold turns present (text · rendered) | gold images native |",
    "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const row of retention) {
    const none = retention.find(
      (candidate) =>
        candidate.dataset === row.dataset && candidate.budgetName === row.budgetName && candidate.manager === "none",
    );
    const ratio = none ? fixed(row.tokens.nonCache / none.tokens.nonCache, 2) : "";
    lines.push(
      `| ${row.dataset} | ${row.budgetName} | ${row.manager} | ${row.role} | ${row.tokens.calls} | ${row.triggers} | ${row.tokens.nonCache.toLocaleString("en")} | ${ratio} | ${row.meanContextTokens.toLocaleString("en")} / ${row.maxContextTokens.toLocaleString("en")} | ${fixed(row.turnRetention)} (${fixed(row.turnAsText)} · ${fixed(row.turnAsRendered)}) of ${row.turnQuestions} q | ${row.imageQuestions > 0 ? `${fixed(row.imageNative)} of ${row.imageQuestions} q` : "–"} |`,
    );
  }
  lines.push("", ...plots.map((plot) => `![${path.basename(plot, ".svg")}](${plot})`), "");
  return lines.join("\n");
}

async function writePlots(
  dir: string,
  fidelity: readonly FidelityRow[],
  retention: readonly BudgetedResult[],
): Promise<string[]> {
  const files: string[] = [];
  const fidelitySpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: "Rendered-page fidelity: OCR word recall vs image tokens per page",
    width: 420,
    height: 260,
    data: {
      values: fidelity.map((row) => ({
        scale: `${row.scale}×`,
        recall: row.wordRecall,
        tokens: row.imageTokens.patch,
      })),
    },
    layer: [
      {
        mark: { type: "line", point: true },
        encoding: {
          x: { field: "tokens", type: "quantitative", title: "image tokens per page (28-px patches)" },
          y: { field: "recall", type: "quantitative", title: "OCR word recall", scale: { domain: [0, 1] } },
        },
      },
      {
        mark: { type: "text", dy: -10 },
        encoding: {
          x: { field: "tokens", type: "quantitative" },
          y: { field: "recall", type: "quantitative" },
          text: { field: "scale" },
        },
      },
    ],
    config: { font: "sans-serif" },
  };
  await writeFile(path.join(dir, "context-fidelity.svg"), await renderSvg(fidelitySpec as never));
  files.push("context-fidelity.svg");
  for (const key of [...new Set(retention.map((row) => `${row.dataset}|${row.budgetName}`))]) {
    const [dataset = "", budgetName = ""] = key.split("|");
    const rows = retention.filter((row) => row.dataset === dataset && row.budgetName === budgetName);
    const spec = {
      $schema: "https://vega.github.io/schema/vega-lite/v5.json",
      title: `${dataset} (${budgetName} budget): gold evidence retained vs cumulative non-cache tokens`,
      width: 420,
      height: 260,
      data: {
        values: rows.map((row) => ({
          manager: row.manager,
          tokens: row.tokens.nonCache / 1e6,
          turns: row.turnRetention,
          images: row.imageQuestions > 0 ? row.imageNative : null,
        })),
      },
      layer: [
        {
          mark: { type: "point", filled: true, size: 80 },
          encoding: {
            x: { field: "tokens", type: "quantitative", title: "cumulative non-cache tokens (millions)" },
            y: {
              field: "turns",
              type: "quantitative",
              title: "share of gold turns present",
              scale: { domain: [0, 1] },
            },
            color: { field: "manager", type: "nominal" },
          },
        },
        {
          mark: { type: "text", dx: 8, align: "left" },
          encoding: {
            x: { field: "tokens", type: "quantitative" },
            y: { field: "turns", type: "quantitative" },
            text: { field: "manager" },
          },
        },
      ],
      config: { font: "sans-serif" },
    };
    const file = `context-retention-${dataset}-${budgetName}.svg`;
    await writeFile(path.join(dir, file), await renderSvg(spec as never));
    files.push(file);
  }
  return files;
}
