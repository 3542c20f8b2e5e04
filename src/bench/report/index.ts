import path from "node:path";
import { benchMethods } from "../methods/index.ts";
import type { BenchResult } from "../run-bench.ts";
import { writeBenchmarksMarkdown } from "./benchmarks-md.ts";
import { writePlots } from "./plots.ts";
import { readResultSummaries, type SkippedFile } from "./read-result-summaries.ts";
import { writeResults } from "./write-results.ts";

export type { BenchResultSummary } from "./bench-result-summary.ts";
export { renderBenchmarksMarkdown, writeBenchmarksMarkdown } from "./benchmarks-md.ts";
export { writePlots } from "./plots.ts";
export { readResultSummaries } from "./read-result-summaries.ts";
export { writeResults } from "./write-results.ts";

export interface ReportOptions {
  /** Where result JSON/JSONL and plots go; results already there from other runs are reported too. */
  readonly outDir: string;
  /** The Markdown report, e.g. `BENCHMARKS.md` at the repository root. */
  readonly benchmarksFile: string;
  /** The command lines that produced the results, shown in the report. */
  readonly commands: readonly string[];
  /** Row, bar and colour order of methods; by default the harness's report order, then this run's others. */
  readonly methodOrder?: readonly string[];
}

export interface Report {
  /** Every file written: results, plots, then the Markdown report. */
  readonly files: string[];
  /** JSON files in `outDir` left out of the report, and why (e.g. perf runs). */
  readonly skipped: SkippedFile[];
}

/**
 * Writes this run's results, then redraws the plots and the Markdown report from every result in
 * `outDir`, so running one dataset keeps the others' tables.
 *
 * @example
 * await writeReport(results, { outDir: "bench/results", benchmarksFile: "BENCHMARKS.md", commands: ["npm run bench"] });
 */
export async function writeReport(results: readonly BenchResult[], options: ReportOptions): Promise<Report> {
  const resultFiles = await writeResults(results, options.outDir);
  const methodOrder = options.methodOrder ?? [
    ...new Set([...benchMethods.map((method) => method.name), ...results.map((result) => result.method)]),
  ];
  const { results: summaries } = await readResultSummaries(options.outDir);
  const plots = await writePlots(summaries, options.outDir, { methodOrder });
  const relativeTo = path.dirname(options.benchmarksFile);
  const markdown = await writeBenchmarksMarkdown(options.outDir, options.benchmarksFile, {
    plots: plots.map((plot) => path.relative(relativeTo, plot).split(path.sep).join("/")),
    commands: options.commands,
    methodOrder,
  });
  return { files: [...resultFiles, ...plots, markdown.file], skipped: markdown.skipped };
}
