import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { MetricSummary } from "../metrics.ts";
import { type BenchResultSummary, groupByDataset, recallLevel } from "./bench-result-summary.ts";
import { readResultSummaries, type SkippedFile } from "./read-result-summaries.ts";
import { fileSafe } from "./write-results.ts";

export interface BenchmarksMarkdownOptions {
  /** Plot files, relative to the Markdown file; each shows under the dataset its file name starts with. */
  readonly plots: readonly string[];
  /** The command lines that produced the results. */
  readonly commands: readonly string[];
  /** Row order of methods; methods not listed follow in name order. */
  readonly methodOrder?: readonly string[];
}

/**
 * Reads every result JSON in `resultsDir` (other JSON is skipped) and writes the Markdown report.
 *
 * @example
 * await writeBenchmarksMarkdown("bench/results", "BENCHMARKS.md", { plots: [], commands: ["npm run bench"] });
 */
export async function writeBenchmarksMarkdown(
  resultsDir: string,
  outFile: string,
  options: BenchmarksMarkdownOptions,
): Promise<{ readonly file: string; readonly skipped: SkippedFile[] }> {
  const { results, skipped } = await readResultSummaries(resultsDir);
  await mkdir(path.dirname(outFile), { recursive: true });
  await writeFile(outFile, renderBenchmarksMarkdown(results, options));
  return { file: outFile, skipped };
}

/** The whole report: how it was run, then per dataset its tables, notes and plots. Pure. */
export function renderBenchmarksMarkdown(
  results: readonly BenchResultSummary[],
  options: BenchmarksMarkdownOptions,
): string {
  const byDataset = groupByDataset(results, options.methodOrder);
  const datasetOfPlot = new Map(options.plots.map((plot) => [plot, plotDataset(plot, [...byDataset.keys()])]));
  const blocks = [
    "# Benchmarks",
    "Evidence retrieval measured by the bench harness (DESIGN §8): each dataset is replayed session by session, " +
      "then every method answers every question from the same memory under the same budget. Recall is measured on " +
      "the evidence pack delivered at the budget and macro-averaged over the questions that have gold at that level.",
    ...renderHowRun(results, options.commands),
  ];
  if (byDataset.size === 0) blocks.push("No results yet.");
  for (const [dataset, rows] of byDataset) {
    const plots = options.plots.filter((plot) => datasetOfPlot.get(plot) === dataset);
    blocks.push(...renderDataset(dataset, rows, plots));
  }
  const unplaced = options.plots.filter((plot) => datasetOfPlot.get(plot) === undefined);
  if (unplaced.length > 0) blocks.push("## Other plots", ...unplaced.map(image));
  return `${blocks.join("\n\n")}\n`;
}

function renderHowRun(results: readonly BenchResultSummary[], commands: readonly string[]): string[] {
  const blocks = ["## How it was run"];
  if (commands.length > 0) blocks.push(["```sh", ...commands, "```"].join("\n"));
  if (results.length === 0) return blocks;
  const facts: [string, (result: BenchResultSummary) => string][] = [
    ["Profile", (result) => code(result.config.profile)],
    ["Models", (result) => describeModels(result.config.models)],
    [
      "Budget",
      ({ config: { budget } }) =>
        `${integer(budget.pages)} index pages, ${integer(budget.rawNodes)} raw nodes, ${integer(budget.images)} images, ${integer(budget.textTokens)} text tokens`,
    ],
    ["Search", ({ config: { search } }) => `RRF k = ${search.rrfK}, ${search.perChannel} candidates per channel`],
    [
      "Histories",
      (result) => (result.config.limit === null ? "all" : `first ${integer(result.config.limit)} (--limit)`),
    ],
    [
      "Machine",
      ({ config: { machine } }) => `${machine.cpu}, ${machine.cores} cores, Node ${machine.node.replace(/^v/, "")}`,
    ],
    ["Date", (result) => runDate(result.config.date)],
  ];
  blocks.push(facts.map(([label, describe]) => `- **${label}**: ${perDataset(results, describe)}`).join("\n"));
  return blocks;
}

/** One value when every result agrees, else each value with the datasets it applies to. */
function perDataset(results: readonly BenchResultSummary[], describe: (result: BenchResultSummary) => string): string {
  const datasets = new Map<string, Set<string>>();
  for (const result of results) {
    const value = describe(result);
    datasets.set(value, (datasets.get(value) ?? new Set()).add(result.dataset));
  }
  if (datasets.size === 1) return [...datasets.keys()][0] ?? "";
  return [...datasets].map(([value, names]) => `${value} (${[...names].sort().join(", ")})`).join("; ");
}

function describeModels(models: BenchResultSummary["config"]["models"]): string {
  const readers = models.imageReaders.length === 0 ? "none" : models.imageReaders.map(code).join(", ");
  return `text ${code(models.text)}, image ${models.image === null ? "none" : code(models.image)}, image readers ${readers}`;
}

const columns: readonly [string, (summary: MetricSummary) => string][] = [
  ["Turn recall", (summary) => share(summary.recallTurn)],
  ["Session recall", (summary) => share(summary.recallSession)],
  ["Image recall", (summary) => share(summary.recallImage)],
  ["Route-Hit", (summary) => share(summary.routeHit)],
  ["Support Recall", (summary) => share(summary.supportRecall)],
  ["hit@10", (summary) => share(summary.hitAt10)],
  ["MRR", (summary) => share(summary.mrr)],
  ["Image hit rate", (summary) => share(summary.imageHitRate)],
  ["Mean text tokens", (summary) => integer(summary.textTokensMean)],
  ["Mean images", (summary) => decimal(summary.imagesMean, 2)],
  ["Search p50 ms", (summary) => decimal(summary.latencyP50Ms, 1)],
  ["Search p95 ms", (summary) => decimal(summary.latencyP95Ms, 1)],
];

function renderDataset(dataset: string, rows: readonly BenchResultSummary[], plots: readonly string[]): string[] {
  const first = rows[0];
  if (first === undefined) return [];
  const blocks = [`## ${escapeText(dataset)}`, describeQuestions(rows)];
  const mixed = describeMixedRuns(rows);
  if (mixed !== null) blocks.push(mixed);
  blocks.push(
    table(
      ["Method", ...columns.map(([name]) => name)],
      rows.map((row) => [code(row.method), ...columns.map(([, cell]) => cell(row.summary))]),
    ),
  );
  const { ingest } = first;
  const seconds = ingest.ms / 1000;
  const rate = seconds > 0 ? `${decimal(ingest.rawNodes / seconds, 1)} raw nodes/s` : "rate not measured";
  blocks.push(
    `Ingest (shared by every method): ${integer(ingest.histories)} histories, ${integer(ingest.sessions)} sessions, ` +
      `${integer(ingest.rawNodes)} raw nodes in ${decimal(seconds, 1)} s (${rate}). ` +
      `Peak RSS ${integer(Math.max(...rows.map((row) => row.peakRssMb)))} MB.`,
  );
  blocks.push("### By category", ...renderCategories(rows));
  blocks.push(...renderKnowledgeUpdate(dataset, rows));
  blocks.push(...renderMaintenance(rows));
  blocks.push(
    details(
      "Methods and warnings",
      rows.map((row) => {
        const warnings = row.warnings.map((warning) => `\n  - warning: ${escapeText(warning)}`).join("");
        return `- ${code(row.method)}: ${escapeText(row.description)}${warnings}`;
      }),
    ),
  );
  if (first.notes.length > 0) {
    blocks.push(
      details(
        `Dataset notes (${first.notes.length})`,
        first.notes.map((note) => `- ${escapeText(note)}`),
      ),
    );
  }
  blocks.push(...plots.map(image));
  return blocks;
}

function describeQuestions(rows: readonly BenchResultSummary[]): string {
  const counts = new Set(rows.map((row) => `${row.summary.questions}/${row.summary.emptyGold}`));
  const first = rows[0]?.summary;
  if (first === undefined) return "";
  if (counts.size > 1) {
    const each = rows.map(
      (row) => `${code(row.method)} ${integer(row.summary.questions)} (${row.summary.emptyGold} without gold)`,
    );
    return `Questions differ between methods: ${each.join(", ")}. Questions without gold evidence are left out of the recall metrics.`;
  }
  const emptyGold =
    first.emptyGold === 0
      ? "every question has gold evidence"
      : `${integer(first.emptyGold)} have no gold evidence and are reported apart: they are left out of the recall ` +
        "metrics and still count for tokens, images and latency";
  return `${integer(first.questions)} questions; ${emptyGold}.`;
}

/** Rows of one table should come from one run; a leftover file from an earlier run is called out. */
function describeMixedRuns(rows: readonly BenchResultSummary[]): string | null {
  const groups = new Map<string, string[]>();
  for (const row of rows) {
    const { profile, models, budget, search, limit } = row.config;
    const key = JSON.stringify([profile, models, budget, search, limit, row.summary.questions]);
    groups.set(key, [...(groups.get(key) ?? []), row.method]);
  }
  if (groups.size <= 1) return null;
  const parts = [...groups.values()].map((methods) => {
    const row = rows.find((candidate) => candidate.method === methods[0]);
    const when = row ? `run ${runDate(row.config.date)}, limit ${row.config.limit ?? "none"}` : "";
    return `${methods.map(code).join(", ")} (${when})`;
  });
  return `> **Note:** these rows come from runs with different settings or questions: ${parts.join("; ")}.`;
}

function renderCategories(rows: readonly BenchResultSummary[]): string[] {
  const categories = [...new Set(rows.flatMap((row) => Object.keys(row.byCategory)))].sort();
  if (categories.length === 0) return ["No categories."];
  const lines = categories.map((category) => {
    const summaries = rows.map((row) => row.byCategory[category]);
    const level = recallLevel(summaries);
    const known = summaries.find((summary) => summary !== undefined);
    const questions = known
      ? `${integer(known.questions)}${known.emptyGold > 0 ? ` (${known.emptyGold} without gold)` : ""}`
      : "—";
    const cells = summaries.map((summary) => {
      if (summary === undefined || level === null) return "—";
      return share(level === "turn" ? summary.recallTurn : summary.recallSession);
    });
    return [escapeText(category), level ?? "—", questions, ...cells];
  });
  return [
    "Turn recall per category; session recall where the category has no turn gold (the Level column says which).",
    table(["Category", "Level", "Questions", ...rows.map((row) => code(row.method))], lines, 2),
  ];
}

/**
 * The categories whose questions ask for the latest state of something (issue 4): Mem-Gallery's
 * conflict detection and knowledge resolution, LoCoMo's temporal questions, LCMP's state identification.
 */
export const knowledgeUpdateCategories: Readonly<Record<string, readonly string[]>> = {
  locomo: ["temporal"],
  "mem-gallery": ["CD", "KR"],
  lcmp: ["State Identification"],
};

function renderKnowledgeUpdate(dataset: string, rows: readonly BenchResultSummary[]): string[] {
  const categories = (knowledgeUpdateCategories[dataset] ?? []).filter((category) =>
    rows.some((row) => row.byCategory[category]),
  );
  if (categories.length === 0) return [];
  const reference = rows.find((row) => row.method === "tri-path");
  const recall = (row: BenchResultSummary) => {
    const summaries = categories.map((category) => row.byCategory[category]).filter((summary) => summary !== undefined);
    const questions = summaries.reduce((sum, summary) => sum + (summary.questions - summary.emptyGold), 0);
    if (questions === 0) return null;
    const level = recallLevel(summaries);
    const total = summaries.reduce((sum, summary) => {
      const value = level === "turn" ? summary.recallTurn : summary.recallSession;
      return sum + (value ?? 0) * (summary.questions - summary.emptyGold);
    }, 0);
    return total / questions;
  };
  const mrr = (row: BenchResultSummary) => {
    const summaries = categories.map((category) => row.byCategory[category]).filter((summary) => summary !== undefined);
    const weighted = summaries.filter((summary) => summary.mrr !== null);
    const questions = weighted.reduce((sum, summary) => sum + (summary.questions - summary.emptyGold), 0);
    if (questions === 0) return null;
    return (
      weighted.reduce((sum, summary) => sum + (summary.mrr ?? 0) * (summary.questions - summary.emptyGold), 0) /
      questions
    );
  };
  const base = reference ? recall(reference) : null;
  return [
    "### Knowledge update",
    `Questions about the latest state (${categories.map(escapeText).join(", ")}): recall pooled over those categories, its difference from \`tri-path\` in points, and MRR (how early the first gold evidence comes: whether the latest state comes first).`,
    table(
      ["Method", "Recall", "Δ vs tri-path (points)", "MRR"],
      rows.map((row) => {
        const value = recall(row);
        const delta = value === null || base === null ? "—" : decimal((value - base) * 100, 1);
        return [code(row.method), share(value), delta, share(mrr(row))];
      }),
    ),
  ];
}

function renderMaintenance(rows: readonly BenchResultSummary[]): string[] {
  const indexed = rows.filter((row) => row.maintenance);
  if (indexed.length === 0) return [];
  return [
    "### Active index after replay",
    "Per episode (history), averaged: what maintenance left in the index under the shared bounds, the capacity " +
      "fallbacks it took, and the raw nodes the index still reaches (C3M: pointers must equal raw nodes). " +
      "Violations are what `checkIndex` finds (provenance, audit, bounds, structure) summed over episodes.",
    table(
      [
        "Method",
        "Utilisation",
        "Active entries",
        "Index tokens",
        "Overflow repairs / episode",
        "Pointers / episode",
        "Raw nodes / episode",
        "Episodes with every pointer",
        "Violations",
      ],
      indexed.map((row) => {
        const m = row.maintenance as NonNullable<BenchResultSummary["maintenance"]>;
        return [
          code(row.method),
          decimal(m.utilisationMean, 3),
          decimal(m.activeEntriesMean, 1),
          integer(m.indexTokensMean),
          decimal(m.overflowRepairsPerEpisode, 2),
          decimal(m.pointersPerEpisode, 1),
          decimal(m.rawNodesPerEpisode, 1),
          `${m.episodesWithAllPointers}/${m.episodes}`,
          integer(m.violations),
        ];
      }),
    ),
  ];
}

/** The dataset whose name the plot's file name starts with (the longest such name). */
function plotDataset(plot: string, datasets: readonly string[]): string | undefined {
  const name = path.posix.basename(plot.replaceAll("\\", "/"));
  return datasets.filter((dataset) => name.startsWith(`${fileSafe(dataset)}-`)).sort((a, b) => b.length - a.length)[0];
}

/** A GFM table; the first `textColumns` columns align left, the numbers after them right. */
function table(header: readonly string[], rows: readonly (readonly string[])[], textColumns = 1): string {
  const align = header.map((_, index) => (index < textColumns ? "---" : "---:"));
  return [header, align, ...rows].map((cells) => `| ${cells.map(escapeCell).join(" | ")} |`).join("\n");
}

function details(summary: string, lines: readonly string[]): string {
  return `<details>\n<summary>${summary}</summary>\n\n${lines.join("\n")}\n\n</details>`;
}

function image(plot: string): string {
  const name = path.posix.basename(plot.replaceAll("\\", "/")).replace(/\.svg$/, "");
  return `![${name}](${encodeURI(plot.replaceAll("\\", "/"))})`;
}

function runDate(iso: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso);
  return match ? `${match[1]} ${match[2]} UTC` : iso;
}

function share(value: number | null): string {
  return value === null ? "—" : value.toFixed(3);
}

function decimal(value: number, digits: number): string {
  return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function integer(value: number): string {
  return decimal(value, 0);
}

function code(text: string): string {
  return `\`${text.replaceAll("`", "'")}\``;
}

function escapeText(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

function escapeCell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}
