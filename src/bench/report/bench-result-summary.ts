import { z } from "zod";
import type { MetricSummary } from "../metrics.ts";
import type { BenchResult } from "../run-bench.ts";

/** A result as written to `<dataset>-<method>.json`: everything but the per-question list. */
export type BenchResultSummary = Omit<BenchResult, "questions">;

/** Drops the per-question list, which goes to its own JSONL file. */
export function summaryOf(result: BenchResult): BenchResultSummary {
  const { questions: _questions, ...summary } = result;
  return summary;
}

const count = z.number().finite().nonnegative();
const share = z.number().finite().nullable();

const metricSummarySchema = z.object({
  questions: count,
  emptyGold: count,
  recallTurn: share,
  recallSession: share,
  recallImage: share,
  routeHit: share,
  supportRecall: share,
  hitAt1: share,
  hitAt5: share,
  hitAt10: share,
  mrr: share,
  // Absent in results from before recall@k was measured.
  recallAt5: share.optional(),
  recallAt10: share.optional(),
  recallAt20: share.optional(),
  mrrAt10: share.optional(),
  imageHitRate: share,
  textTokensMean: count,
  imagesMean: count,
  latencyP50Ms: count,
  latencyP95Ms: count,
});

/**
 * The shape a result file must have to be reported. Result folders also hold other JSON
 * (perf runs, notes), so this is how the report tells results apart rather than by file name.
 */
export const benchResultSummarySchema: z.ZodType<BenchResultSummary, z.ZodTypeDef, unknown> = z.object({
  dataset: z.string().min(1),
  method: z.string().min(1),
  description: z.string(),
  config: z.object({
    profile: z.string(),
    models: z.object({ text: z.string(), image: z.string().nullable(), imageReaders: z.array(z.string()) }),
    // Results from before routing carry no page limit: the default beam applied.
    budget: z.object({ pages: count.default(3), rawNodes: count, images: count, textTokens: count }),
    search: z.object({ rrfK: count, perChannel: count }),
    limit: count.nullable(),
    date: z.string(),
    machine: z.object({ cpu: z.string(), cores: count, node: z.string() }),
  }),
  ingest: z.object({ histories: count, sessions: count, rawNodes: count, ms: count }),
  peakRssMb: count,
  summary: metricSummarySchema,
  byCategory: z.record(metricSummarySchema),
  notes: z.array(z.string()),
  warnings: z.array(z.string()),
  maintenance: z
    .object({
      policy: z.string(),
      episodes: count,
      utilisationMean: count,
      activeEntriesMean: count,
      indexTokensMean: count,
      overflowRepairsPerEpisode: count,
      pointersPerEpisode: count,
      rawNodesPerEpisode: count,
      episodesWithAllPointers: count,
      violations: count,
      actions: z.record(count),
    })
    .optional(),
});

/**
 * Results grouped by dataset (in name order), each dataset's methods in `methodOrder` and then
 * by name. Pure; the Markdown and the plots share it so rows, bars and colours line up.
 */
export function groupByDataset(
  results: readonly BenchResultSummary[],
  methodOrder: readonly string[] = [],
): Map<string, BenchResultSummary[]> {
  const rank = (method: string) => {
    const index = methodOrder.indexOf(method);
    return index === -1 ? methodOrder.length : index;
  };
  const datasets = [...new Set(results.map((result) => result.dataset))].sort();
  return new Map(
    datasets.map((dataset) => [
      dataset,
      results
        .filter((result) => result.dataset === dataset)
        .sort((a, b) => rank(a.method) - rank(b.method) || a.method.localeCompare(b.method)),
    ]),
  );
}

/** The level recall is compared at: turn where any summary has turn gold, else session, else none. */
export function recallLevel(summaries: readonly (MetricSummary | undefined)[]): "turn" | "session" | null {
  if (summaries.some((summary) => summary?.recallTurn != null)) return "turn";
  if (summaries.some((summary) => summary?.recallSession != null)) return "session";
  return null;
}
