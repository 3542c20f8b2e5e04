/**
 * Evidence recall on SQLite beside Postgres, from two `cairn bench` runs of the same datasets, methods,
 * profile and budget (one per `--store`):
 *
 *   npx cairn bench --dataset lcmp,locomo --method cairn,tri-path --store sqlite --out bench/results/tmp/recall-sqlite
 *   npx cairn bench --dataset lcmp,locomo --method cairn,tri-path --store postgres --out bench/results/tmp/recall-postgres
 *   npx tsx bench/store-recall.ts --sqlite bench/results/tmp/recall-sqlite --postgres bench/results/tmp/recall-postgres
 *
 * Writes `<out>/postgres-recall.json`, `<out>/postgres-recall.md` and `<out>/postgres-recall.svg`: per dataset and method, each metric
 * on both stores, the difference in points (target: within 1 of SQLite), and the questions whose packs
 * differ (paired by question id), to find the cause of a difference.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { MetricSummary, QuestionScore } from "../src/bench/metrics.ts";
import { renderSvg } from "../src/bench/report/plots.ts";
import type { BenchResult } from "../src/bench/run-bench.ts";

const { values } = parseArgs({
  options: {
    sqlite: { type: "string" },
    postgres: { type: "string" },
    out: { type: "string", default: "bench/results" },
    /** Base name of the three files written. */
    name: { type: "string", default: "postgres-recall" },
  },
});
if (!values.sqlite || !values.postgres) {
  console.error("give --sqlite DIR and --postgres DIR (two cairn bench --out folders)");
  process.exit(2);
}

const metrics = ["recallTurn", "recallSession", "recallImage", "hitAt10", "mrr"] as const;
type Metric = (typeof metrics)[number];

interface Row {
  readonly dataset: string;
  readonly method: string;
  readonly questions: number;
  readonly sqlite: Pick<MetricSummary, Metric | "latencyP50Ms" | "latencyP95Ms"> & { readonly ingestMs: number };
  readonly postgres: Pick<MetricSummary, Metric | "latencyP50Ms" | "latencyP95Ms"> & { readonly ingestMs: number };
  /** Postgres − SQLite, in points (×100). */
  readonly differencePoints: Record<Metric, number | null>;
  /** Questions whose pack (dataset turn ids, in order) is the same on both stores. */
  readonly samePack: number;
  /** Questions whose turn recall moved, and by how much in total (points, summed over the questions). */
  readonly turnRecallUp: number;
  readonly turnRecallDown: number;
  readonly withinOnePoint: boolean;
}

/** Each `<dataset>-<method>.json` with its questions from the `.questions.jsonl` beside it. */
function readResults(dir: string): Map<string, BenchResult> {
  const results = new Map<string, BenchResult>();
  for (const name of readdirSync(dir).filter((file) => file.endsWith(".json"))) {
    const result = JSON.parse(readFileSync(join(dir, name), "utf8")) as Omit<BenchResult, "questions">;
    if (!result.dataset || !result.method) continue;
    const questions = readFileSync(join(dir, name.replace(/\.json$/, ".questions.jsonl")), "utf8")
      .split("\n")
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line) as QuestionScore);
    results.set(`${result.dataset}/${result.method}`, { ...result, questions });
  }
  return results;
}

const pick = (summary: MetricSummary) =>
  Object.fromEntries([...metrics, "latencyP50Ms", "latencyP95Ms"].map((key) => [key, summary[key as Metric]])) as Pick<
    MetricSummary,
    Metric | "latencyP50Ms" | "latencyP95Ms"
  >;

const sqliteResults = readResults(resolve(values.sqlite));
const postgresResults = readResults(resolve(values.postgres));
const rows: Row[] = [];
for (const [key, sqlite] of sqliteResults) {
  const postgres = postgresResults.get(key);
  if (!postgres) continue;
  const byId = new Map<string, QuestionScore>(postgres.questions.map((question) => [question.id, question]));
  let samePack = 0;
  let turnRecallUp = 0;
  let turnRecallDown = 0;
  for (const question of sqlite.questions) {
    const other = byId.get(question.id);
    if (!other) continue;
    if (question.retrievedTurns.join("\n") === other.retrievedTurns.join("\n")) samePack++;
    const change = (other.recall.turn ?? 0) - (question.recall.turn ?? 0);
    if (change > 0) turnRecallUp++;
    if (change < 0) turnRecallDown++;
  }
  const differencePoints = Object.fromEntries(
    metrics.map((metric) => {
      const left = sqlite.summary[metric];
      const right = postgres.summary[metric];
      return [metric, left === null || right === null ? null : Math.round((right - left) * 1000) / 10];
    }),
  ) as Record<Metric, number | null>;
  rows.push({
    dataset: sqlite.dataset,
    method: sqlite.method,
    questions: sqlite.summary.questions,
    sqlite: { ...pick(sqlite.summary), ingestMs: sqlite.ingest.ms },
    postgres: { ...pick(postgres.summary), ingestMs: postgres.ingest.ms },
    differencePoints,
    samePack,
    turnRecallUp,
    turnRecallDown,
    withinOnePoint: (["recallTurn", "recallSession", "recallImage"] as const).every(
      (metric) => Math.abs(differencePoints[metric] ?? 0) <= 1,
    ),
  });
}
if (rows.length === 0) {
  console.error("no (dataset, method) result in both folders");
  process.exit(1);
}
rows.sort((left, right) => left.dataset.localeCompare(right.dataset) || left.method.localeCompare(right.method));
const anyResult = [...postgresResults.values()][0] as BenchResult;
const report = {
  sqliteRun: resolve(values.sqlite),
  postgresRun: resolve(values.postgres),
  profile: anyResult.config.profile,
  models: anyResult.config.models,
  budget: anyResult.config.budget,
  machine: anyResult.config.machine,
  postgres: anyResult.config.store,
  rows,
  target: {
    description: "evidence recall (turn, session, image) within 1 point of SQLite on every dataset",
    met: rows.every((row) => row.withinOnePoint),
  },
};
const out = resolve(values.out);
writeFileSync(join(out, `${values.name}.json`), `${JSON.stringify(report, null, 2)}\n`);

const value = (number: number | null) => (number === null ? "–" : number.toFixed(3));
const points = (number: number | null) => (number === null ? "–" : `${number > 0 ? "+" : ""}${number.toFixed(1)}`);
const lines = [
  "# Evidence recall: Postgres beside SQLite",
  "",
  "Regenerated by `bench/store-recall.ts` from two `cairn bench` runs (one per `--store`) of the same datasets, methods,",
  `profile and budget; \`${values.name}.json\` beside this file has every figure.`,
  "",
  `- profile \`${report.profile}\` (text \`${report.models.text}\`, image \`${report.models.image}\`); budget ${JSON.stringify(report.budget)}`,
  `- machine: ${report.machine.cpu}, ${report.machine.cores} cores, node ${report.machine.node}`,
  `- Postgres: ${report.postgres?.description ?? "?"}`,
  "",
  "| dataset | method | questions | turn R SQLite | turn R Postgres | Δ pts | session R SQLite | session R Postgres | Δ pts | image R SQLite | image R Postgres | Δ pts | MRR Δ pts | same pack | turn R up / down | search p95 ms SQLite / Postgres |",
  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ...rows.map(
    (row) =>
      `| ${row.dataset} | \`${row.method}\` | ${row.questions} | ${value(row.sqlite.recallTurn)} | ${value(row.postgres.recallTurn)} | ${points(row.differencePoints.recallTurn)} | ${value(row.sqlite.recallSession)} | ${value(row.postgres.recallSession)} | ${points(row.differencePoints.recallSession)} | ${value(row.sqlite.recallImage)} | ${value(row.postgres.recallImage)} | ${points(row.differencePoints.recallImage)} | ${points(row.differencePoints.mrr)} | ${row.samePack}/${row.questions} | ${row.turnRecallUp} / ${row.turnRecallDown} | ${row.sqlite.latencyP95Ms.toFixed(1)} / ${row.postgres.latencyP95Ms.toFixed(1)} |`,
  ),
  "",
  `Target (${report.target.description}): **${report.target.met ? "met" : "NOT met"}**.`,
  "",
  `![Evidence recall on SQLite and Postgres](${values.name}.svg)`,
  "",
];
writeFileSync(join(out, `${values.name}.md`), lines.join("\n"));
const bars = rows.flatMap((row) =>
  (["sqlite", "postgres"] as const).flatMap((store) =>
    (["recallTurn", "recallSession", "recallImage"] as const).flatMap((metric) => {
      const recall = row[store][metric];
      if (recall === null) return [];
      const level = { recallTurn: "turn", recallSession: "session", recallImage: "image" }[metric];
      return [
        { group: `${row.dataset} ${row.method}`, level, store: store === "sqlite" ? "SQLite" : "Postgres", recall },
      ];
    }),
  ),
);
const svg = await renderSvg({
  $schema: "https://vega.github.io/schema/vega-lite/v6.json",
  title: {
    text: "Evidence recall: SQLite and Postgres stores",
    subtitle: `profile ${report.profile}, same datasets, methods and budget`,
  },
  data: { values: bars },
  facet: { column: { field: "level", type: "nominal", title: "Recall level", sort: ["turn", "session", "image"] } },
  spec: {
    width: { step: 14, for: "offset" },
    height: 220,
    mark: { type: "bar" },
    encoding: {
      x: { field: "group", type: "nominal", title: null, axis: { labelAngle: -30, labelLimit: 200 } },
      xOffset: { field: "store", type: "nominal", scale: { domain: ["SQLite", "Postgres"] } },
      y: { field: "recall", type: "quantitative", scale: { domain: [0, 1] }, title: "Evidence recall" },
      color: { field: "store", type: "nominal", scale: { domain: ["SQLite", "Postgres"] }, title: "Store" },
      tooltip: [{ field: "recall", format: ".3f" }],
    },
  },
});
writeFileSync(join(out, `${values.name}.svg`), svg);
console.log(lines.join("\n"));
