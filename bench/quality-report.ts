/**
 * Renders issue 19's before/after tables from `cairn bench --out DIR` result folders, as Markdown on stdout:
 *
 *   npx tsx bench/quality-report.ts before=DIR after=DIR [ablation-name=DIR ...]
 *
 * Per method: recall@5/10/20 and MRR@10 (and the budgeted turn recall and MRR); then recall@10 (MRR@10) per
 * category for each method present in every folder. The report quotes the output; it never writes a file.
 */
import type { MetricSummary } from "../src/bench/metrics.ts";
import type { BenchResultSummary } from "../src/bench/report/bench-result-summary.ts";
import { readResultSummaries } from "../src/bench/report/read-result-summaries.ts";

const runs: { label: string; results: readonly BenchResultSummary[] }[] = [];
for (const argument of process.argv.slice(2)) {
  const at = argument.indexOf("=");
  const label = argument.slice(0, at);
  const { results } = await readResultSummaries(argument.slice(at + 1));
  runs.push({ label, results });
}
const share = (value: number | null | undefined) => (value === null || value === undefined ? "—" : value.toFixed(3));
const row = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;

const datasets = [...new Set(runs.flatMap((run) => run.results.map((result) => result.dataset)))];
for (const dataset of datasets) {
  console.log(`#### ${dataset}\n`);
  console.log(
    row(["Run", "Method", "recall@5", "recall@10", "recall@20", "MRR@10", "Turn recall (budget)", "MRR (budget)"]),
  );
  console.log(row(["---", "---", "---:", "---:", "---:", "---:", "---:", "---:"]));
  for (const run of runs) {
    for (const result of run.results.filter((candidate) => candidate.dataset === dataset)) {
      const s: MetricSummary = result.summary;
      console.log(
        row([
          run.label,
          `\`${result.method}\``,
          share(s.recallAt5),
          share(s.recallAt10),
          share(s.recallAt20),
          share(s.mrrAt10),
          share(s.recallTurn),
          share(s.mrr),
        ]),
      );
    }
  }
  const categories = [
    ...new Set(runs.flatMap((run) => run.results.flatMap((result) => Object.keys(result.byCategory)))),
  ].sort();
  console.log(`\nRecall@5 / recall@10 / recall@20 (MRR@10) per category:\n`);
  console.log(row(["Run", "Method", ...categories]));
  console.log(row(["---", "---", ...categories.map(() => "---:")]));
  for (const run of runs) {
    for (const result of run.results.filter((candidate) => candidate.dataset === dataset)) {
      console.log(
        row([
          run.label,
          `\`${result.method}\``,
          ...categories.map((category) => {
            const s = result.byCategory[category];
            if (!s) return "—";
            return `${share(s.recallAt5)} / ${share(s.recallAt10)} / ${share(s.recallAt20)} (${share(s.mrrAt10)})`;
          }),
        ]),
      );
    }
  }
  console.log("");
}
