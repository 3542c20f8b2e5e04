import { join, resolve } from "node:path";
import { ablationOptions, ablations } from "../../../bench/ablations.ts";
import { type AnswerJudge, createAnswerJudge } from "../../../bench/answer/answer-judge.ts";
import {
  type BenchStore,
  benchStoreNames,
  isBenchStoreName,
  openPostgresBenchStore,
  sqliteBenchStore,
} from "../../../bench/bench-store.ts";
import { type DatasetName, datasetNames, loadDataset, resolveDataDir } from "../../../bench/datasets/index.ts";
import { selectMethods } from "../../../bench/methods/index.ts";
import type { MetricSummary } from "../../../bench/metrics.ts";
import { writeReport } from "../../../bench/report/index.ts";
import { plotLibraries } from "../../../bench/report/plots.ts";
import { type BenchResult, runBench } from "../../../bench/run-bench.ts";
import { defaultCompileConfig } from "../../../compile/compile-config.ts";
import { InputError } from "../../../core/errors.ts";
import { type Budget, defaultBudget } from "../../../evidence/budget.ts";
import { createEndpointChat, createModels } from "../../../models/profiles.ts";
import { defaultSearchConfig } from "../../../route/search-config.ts";
import { type CommonOptions, output } from "../context.ts";
import { type Progress, startProgress } from "../progress.ts";
import { positiveInteger } from "./search.ts";

export const benchHelp = `cairn bench --dataset locomo|mem-gallery|lcmp|all --method NAME[,NAME]|all [--limit N]
  [--budget rawNodes=12,images=8,textTokens=12000] [--gate alphaRoute=0.6,margin=0.05] [--data DIR] [--out DIR]
  [--benchmarks FILE] [--answer]
  [--store sqlite|postgres] [--ablate LEVER[,LEVER]]
  Replays a dataset query-blind and scores each method's evidence; writes JSON, JSONL, SVG plots and BENCHMARKS.md.
  Only a full SQLite run without --out rewrites bench/results and ./BENCHMARKS.md; with --limit the results go to
  bench/results/tmp (or --out DIR), each with its own BENCHMARKS.md, unless --benchmarks FILE says otherwise.
  --store postgres replays each history into its own database on CAIRN_BENCH_POSTGRES_URL (a role that may create
  roles and databases) or on a throwaway local cluster; its results go to bench/results/postgres (or
  bench/results/tmp/postgres with --limit, or --out DIR) with their own BENCHMARKS.md.
  --answer also answers from each pack with CAIRN_OPENAI_CHAT_MODEL and judges with CAIRN_OPENAI_JUDGE_MODEL
  (default: the same model) on the endpoint CAIRN_OPENAI_BASE_URL.
  --ablate switches evidence-quality levers off for the run (${Object.keys(ablations).join(", ")}); its results go
  to bench/results/tmp (or --out DIR) and never rewrite ./BENCHMARKS.md.`;

export interface BenchFlags {
  readonly dataset?: string;
  readonly method?: string;
  readonly limit?: string;
  readonly budget?: string;
  /** The compiled methods' routing gate (PMMC α_route, δ); defaults from DESIGN §4. */
  readonly gate?: string;
  readonly data?: string;
  readonly out?: string;
  readonly benchmarks?: string;
  readonly answer?: boolean;
  readonly store?: string;
  readonly ablate?: string;
}

export async function bench(options: CommonOptions, flags: BenchFlags, argv: readonly string[]): Promise<number> {
  const datasets = parseDatasets(flags.dataset);
  const storeName = parseStore(flags.store);
  const methods = selectMethods(flags.method ?? "all");
  const budget = parseBudget(flags.budget);
  const gate = parseGate(flags.gate);
  const limit = flags.limit === undefined ? undefined : positiveInteger("--limit", flags.limit);
  const dataDir = resolveDataDir(flags.data);
  // Only a full SQLite run with the default output rewrites the committed results and BENCHMARKS.md; a
  // run with --limit or --out, or on another backend, writes its results and its own BENCHMARKS.md
  // elsewhere (bench/results/tmp is ignored by git), unless --benchmarks names the file.
  const ablate = flags.ablate ? flags.ablate.split(",").map((name) => name.trim()) : [];
  ablationOptions(ablate);
  const partial = limit !== undefined || flags.out !== undefined || storeName !== "sqlite" || ablate.length > 0;
  const defaultOut = join(
    limit !== undefined || ablate.length > 0 ? "bench/results/tmp" : "bench/results",
    storeName === "sqlite" ? "" : storeName,
  );
  const outDir = resolve(flags.out ?? defaultOut);
  // The report draws plots at the end: a missing plotting library fails here, before the run.
  await plotLibraries();
  const chats = flags.answer ? await openAnswerJudge(budget) : undefined;
  const models = await createModels(options.profile);
  const configuration = {
    profile: options.profile,
    budget,
    search: defaultSearchConfig,
    gate,
    limit: limit ?? null,
    ablate,
    dataDir,
  };
  // The harness prints the configuration it ran with, so a table can always be traced to its settings.
  if (!options.json) process.stderr.write(`cairn bench: ${JSON.stringify(configuration)}\n`);
  const results: BenchResult[] = [];
  let store: BenchStore | undefined;
  try {
    store = storeName === "postgres" ? await openPostgresBenchStore() : sqliteBenchStore;
    for (const name of datasets) {
      const dataset = await loadDataset(name, dataDir, { limit });
      let progress: Progress | undefined;
      results.push(
        ...(await runBench({
          dataset,
          methods,
          models,
          budget,
          search: defaultSearchConfig,
          compile: gate,
          limit,
          store,
          ablate,
          answerJudge: chats?.judge,
          onProgress: ({ total, label }) => {
            progress ??= startProgress(`bench ${name}`, total, { quiet: options.json });
            progress.tick(label);
          },
        })),
      );
      progress?.stop();
    }
  } finally {
    await store?.close();
    await models.close();
    await chats?.close();
  }
  const command = `npx cairn bench ${argv.join(" ")}`;
  const report = await writeReport(results, {
    outDir,
    benchmarksFile: resolve(flags.benchmarks ?? (partial ? join(outDir, "BENCHMARKS.md") : "BENCHMARKS.md")),
    commands: [command],
  });
  const summary = results.map(({ dataset, method, summary }) => ({ dataset, method, ...summary }));
  output(options, { configuration, results: summary, files: report.files }, () => renderTable(results, report.files));
  return 0;
}

async function openAnswerJudge(budget: Budget): Promise<{ judge: AnswerJudge; close(): Promise<void> }> {
  const answerer = await createEndpointChat("CAIRN_OPENAI_CHAT_MODEL");
  const judgeModel = process.env.CAIRN_OPENAI_JUDGE_MODEL
    ? await createEndpointChat("CAIRN_OPENAI_JUDGE_MODEL")
    : answerer;
  return {
    judge: createAnswerJudge({ answerer: answerer.chat, judge: judgeModel.chat, maxImages: budget.images }),
    close: async () => {
      await answerer.close();
      if (judgeModel !== answerer) await judgeModel.close();
    },
  };
}

function parseStore(value: string | undefined): BenchStore["name"] {
  const name = value ?? "sqlite";
  if (!isBenchStoreName(name)) {
    throw new InputError("--store", `unknown store ${name} (${benchStoreNames.join(", ")})`);
  }
  return name;
}

function parseDatasets(value: string | undefined): DatasetName[] {
  if (!value) throw new InputError("--dataset", `give a dataset: ${datasetNames.join(", ")} or all`);
  if (value === "all") return [...datasetNames];
  return value.split(",").map((name) => {
    if (!datasetNames.includes(name as DatasetName)) {
      throw new InputError("--dataset", `unknown dataset ${name} (${datasetNames.join(", ")}, all)`);
    }
    return name as DatasetName;
  });
}

/** `alphaRoute=0.6,margin=0.05`: the compiled methods' gate; a setting not named keeps its default. */
function parseGate(value: string | undefined): { alphaRoute: number; margin: number } {
  const gate = { alphaRoute: defaultCompileConfig.alphaRoute, margin: defaultCompileConfig.margin };
  for (const part of value ? value.split(",") : []) {
    const [key, text] = part.split("=");
    const number = Number(text);
    if ((key !== "alphaRoute" && key !== "margin") || text === undefined || !(number >= 0 && number <= 1)) {
      throw new InputError("--gate", `expected alphaRoute=X,margin=Y with X and Y in [0, 1], got ${part}`);
    }
    gate[key] = number;
  }
  return gate;
}

/** `rawNodes=12,images=8,textTokens=12000`; dimensions not named keep their defaults. */
function parseBudget(value: string | undefined): Budget {
  if (!value) return defaultBudget;
  const budget: Record<string, number> = { ...defaultBudget };
  for (const part of value.split(",")) {
    const [key, number] = part.split("=");
    if (!key || !(key in defaultBudget) || number === undefined) {
      throw new InputError("--budget", `expected rawNodes=N,images=N,textTokens=N, got ${part}`);
    }
    budget[key] = positiveInteger(`--budget ${key}`, number);
  }
  return budget as unknown as Budget;
}

function renderTable(results: readonly BenchResult[], files: readonly string[]): string {
  const format = (value: number | null) => (value === null ? "  -  " : value.toFixed(3));
  const columns: [string, (summary: MetricSummary) => string][] = [
    ["turn R", (summary) => format(summary.recallTurn)],
    ["sess R", (summary) => format(summary.recallSession)],
    ["img R", (summary) => format(summary.recallImage)],
    ["route", (summary) => format(summary.routeHit)],
    ["MRR", (summary) => format(summary.mrr)],
    ["tokens", (summary) => summary.textTokensMean.toFixed(0).padStart(5)],
    ["p95 ms", (summary) => summary.latencyP95Ms.toFixed(1).padStart(6)],
  ];
  const lines = [
    `${"dataset".padEnd(12)} ${"method".padEnd(13)} ${columns.map(([name]) => name.padStart(6)).join(" ")}`,
  ];
  for (const result of results) {
    const cells = columns.map(([, cell]) => cell(result.summary).padStart(6));
    lines.push(`${result.dataset.padEnd(12)} ${result.method.padEnd(13)} ${cells.join(" ")}`);
  }
  // Name where the report went: with --limit or --out it is not ./BENCHMARKS.md.
  const report = files.find((file) => file.endsWith(".md")) ?? "no report";
  return [...lines, "", `wrote ${files.length} files (results, plots); the report: ${report}`].join("\n");
}
