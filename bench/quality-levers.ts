/**
 * Issue 19's read-time levers as variants of the default search over one replay (the write-time lever,
 * contextual index text, needs its own replay: `cairn bench --ablate context-text`):
 *
 *   npx tsx bench/quality-levers.ts locomo 2 hash        # dataset, histories (--limit), profile (default local)
 *   npx tsx bench/quality-levers.ts locomo 2 hash quick  # budget 10 only: recall@5 read off the k = 10 pack
 *   CAIRN_LEVERS="bm25,cairn (default)" CAIRN_ABLATE=context-text npx tsx bench/quality-levers.ts locomo 10 hash quick
 *   CAIRN_LEVERS='cairn (default);no session;routing {"timeWeight":0.3}' npx tsx bench/quality-levers.ts locomo 4 hash quick
 *
 * Prints recall@5/10/20 and MRR@10 per variant (each variant read at raw-node budgets 5, 10 and 20), and
 * recall@10 per category, then turn recall and image hit at the main read's budget. Writes nothing unless asked
 * (`CAIRN_RESULTS_OUT`: summaries per variant and category as JSON; `CAIRN_QUESTIONS_OUT`: per-question scores);
 * BENCHMARKS.md quotes what it printed and says how it was run.
 */

import { writeFileSync } from "node:fs";
import type { DatasetName } from "../src/bench/datasets/index.ts";
import { loadDataset, resolveDataDir } from "../src/bench/datasets/index.ts";
import { maintenanceBaselines, storedIndexMethod } from "../src/bench/methods/index-methods.ts";
import { searchMethod } from "../src/bench/methods/search-method.ts";
import { runBench } from "../src/bench/run-bench.ts";
import { defaultBudget } from "../src/evidence/budget.ts";
import { createModels } from "../src/models/profiles.ts";
import { defaultSearchConfig } from "../src/route/search-config.ts";

const [dataset = "locomo", histories = "2", profile = "local", quick] = process.argv.slice(2);
// Comma-separated, or semicolon-separated when a variant holds commas (ad-hoc routing settings, below).
const levers = process.env.CAIRN_LEVERS ?? "";
const variants = levers.split(levers.includes(";") ? ";" : ",").filter(Boolean);
const all = [
  searchMethod("bm25", "", { mode: "tri-path", channels: ["bm25"] }),
  searchMethod("dense", "", { mode: "tri-path", channels: ["dense"] }),
  searchMethod("tri-path", "", { mode: "tri-path" }),
  // As `cairn bench`'s c3m methods: routing read alone follows overflow chains 12 levels deep (decision 029).
  storedIndexMethod("c3m", "", { mode: "route", routing: { lambda: 0.15, linkDepth: 12 } }),
  // The routed index read alone at the unbounded baseline's settings (λ = 0): what routing reaches, not coverage.
  storedIndexMethod("c3m λ0", "", { mode: "route", routing: { lambda: 0, linkDepth: 12 } }),
  ...maintenanceBaselines.filter((method) => method.name === "unbounded"),
  storedIndexMethod("cairn (default)", "", {}),
  storedIndexMethod("order: latest-first", "", { routing: { order: "latest-first" } }),
  storedIndexMethod("image weight 1 (off)", "", { routing: { imageWeight: 1 } }),
  storedIndexMethod("image weight 0.5", "", { routing: { imageWeight: 0.5 } }),
  storedIndexMethod("image weight 0", "", { routing: { imageWeight: 0 } }),
  storedIndexMethod("no image channel", "", { channels: ["bm25", "dense"] }),
  // Routing's contribution to the default: no entry chosen, so only the direct channels' hits are ranked.
  storedIndexMethod("no routing (entries 0)", "", { routing: { entries: 0 } }),
  // Query understanding (decision 024): the session score is on by default; each lever switched on over
  // the default, the session score at other weights, and all of them off.
  storedIndexMethod("session 0.15", "", { routing: { sessionWeight: 0.15 } }),
  storedIndexMethod("session 0.5", "", { routing: { sessionWeight: 0.5 } }),
  storedIndexMethod("+ time 0.3", "", { routing: { timeWeight: 0.3 } }),
  storedIndexMethod("+ time 0.3 slack 0", "", { routing: { timeWeight: 0.3, timeSlackDays: 0 } }),
  storedIndexMethod("+ time 1 (filter-like)", "", { routing: { timeWeight: 1 } }),
  storedIndexMethod("+ speaker 0.2", "", { routing: { speakerWeight: 0.2 } }),
  storedIndexMethod("+ feedback 0.5", "", { routing: { feedbackWeight: 0.5 } }),
  storedIndexMethod("+ feedback 1", "", { routing: { feedbackWeight: 1 } }),
  storedIndexMethod("+ feedback 0.5 all", "", { routing: { feedbackWeight: 0.5, feedbackFor: "all" } }),
  storedIndexMethod("no session", "", { routing: { sessionWeight: 0 } }),
  storedIndexMethod("no query understanding", "", {
    routing: { sessionWeight: 0, timeWeight: 0, speakerWeight: 0, feedbackWeight: 0 },
  }),
];
// Any other routing settings as a variant of their own: `CAIRN_LEVERS='routing {"sessionWeight":0.5}'`.
// `route {…}` reads the routed index alone (`mode: "route"`, as `c3m`) with those settings.
const adHoc = variants
  .filter((name) => /^(routing|route) \{/.test(name) && !all.some((method) => method.name === name))
  .map((name) => {
    const [kind = "", ...settings] = name.split(" ");
    const routing = JSON.parse(settings.join(" "));
    return storedIndexMethod(name, "", kind === "route" ? { mode: "route", routing } : { routing });
  });
// The other maintenance baselines (resum, moviechat, memrefine: each its own index, read by routing alone) only when named.
const baselines = maintenanceBaselines.filter((method) => method.name !== "unbounded");
const methods =
  variants.length > 0 ? [...all, ...baselines, ...adHoc].filter((method) => variants.includes(method.name)) : all;
const models = await createModels(profile);
try {
  const data = await loadDataset(dataset as DatasetName, resolveDataDir(undefined), { limit: Number(histories) });
  const results = await runBench({
    dataset: data,
    methods,
    models,
    budget: quick ? { ...defaultBudget, rawNodes: 10 } : defaultBudget,
    search: defaultSearchConfig,
    atK: !quick,
    // Write-time levers switched off for the replay (see src/bench/ablations.ts).
    ablate: (process.env.CAIRN_ABLATE ?? "").split(",").filter(Boolean),
  });
  const ablated = process.env.CAIRN_ABLATE ? `, ablated: ${process.env.CAIRN_ABLATE}` : "";
  console.log(
    `${dataset}, first ${histories} histories, ${profile} profile${quick ? ", budget 10 (quick)" : ""}${ablated}`,
  );
  const cell = (value: number | null | undefined) =>
    value === null || value === undefined ? "  -  " : value.toFixed(3);
  console.log(`${"variant".padEnd(24)} r@5    r@10   r@20   MRR@10`);
  for (const { method, summary, questions } of results) {
    if (quick) {
      // Read off the k = 10 pack: recall@5 is its first five items.
      const scored = questions.filter((score) => score.gold.turns.length > 0);
      const at5 =
        scored.reduce((sum, score) => {
          const gold = new Set(score.gold.turns);
          return (
            sum + [...new Set(score.retrievedTurns.slice(0, 5))].filter((turn) => gold.has(turn)).length / gold.size
          );
        }, 0) / scored.length;
      console.log(`${method.padEnd(24)} ${cell(at5)}  ${cell(summary.recallTurn)}    -    ${cell(summary.mrr)}`);
    } else {
      const { recallAt5, recallAt10, recallAt20, mrrAt10 } = summary;
      console.log(
        `${method.padEnd(24)} ${cell(recallAt5)}  ${cell(recallAt10)}  ${cell(recallAt20)}  ${cell(mrrAt10)}`,
      );
    }
  }
  // The main read's budget (the default, 12 raw nodes; 10 in quick mode): turn recall there (Mem-Gallery's target is
  // "turn recall at the default budget") and image hit (any gold image in the pack; LCMP's target).
  console.log(`\nat the main read's budget (${quick ? 10 : defaultBudget.rawNodes} raw nodes)`);
  console.log(`${"variant".padEnd(24)} turn   image hit`);
  for (const { method, summary } of results) {
    console.log(`${method.padEnd(24)} ${cell(summary.recallTurn)}  ${cell(summary.imageHitRate)}`);
  }
  // Routing diagnostics for the variants that route: Route-Hit (gold among the first routed candidates)
  // and the index they read (active entries, overflow fallbacks per history).
  for (const { method, summary, maintenance } of results) {
    if (summary.routeHit === null) continue;
    const index = maintenance
      ? `, ${maintenance.activeEntriesMean.toFixed(1)} active entries, ${maintenance.overflowRepairsPerEpisode.toFixed(1)} overflow fallbacks per history`
      : "";
    console.log(`${method}: Route-Hit ${cell(summary.routeHit)}${index}`);
  }
  // Summaries per variant and category, without the per-question scores (`CAIRN_RESULTS_OUT=/tmp/r.json`).
  if (process.env.CAIRN_RESULTS_OUT) {
    const summaries = results.map(({ method, config, ingest, peakRssMb, summary, byCategory }) => ({
      method,
      config,
      ingest,
      peakRssMb,
      summary,
      byCategory,
    }));
    writeFileSync(process.env.CAIRN_RESULTS_OUT, JSON.stringify(summaries, null, 1));
  }
  // Per-question scores for inspecting misses (`CAIRN_QUESTIONS_OUT=/tmp/q.json`): one record per variant.
  if (process.env.CAIRN_QUESTIONS_OUT) {
    const perQuestion = results.map(({ method, questions }) => ({ method, questions }));
    writeFileSync(process.env.CAIRN_QUESTIONS_OUT, JSON.stringify(perQuestion));
  }
  const categories = [...new Set(results.flatMap((result) => Object.keys(result.byCategory)))].sort();
  console.log(`\nrecall@10 by category\n${"variant".padEnd(24)} ${categories.map((c) => c.padStart(12)).join(" ")}`);
  for (const { method, byCategory } of results) {
    const cells = categories.map((category) => {
      const summary = byCategory[category];
      return cell(quick ? (summary?.recallTurn ?? null) : (summary?.recallAt10 ?? null)).padStart(12);
    });
    console.log(`${method.padEnd(24)} ${cells.join(" ")}`);
  }
} finally {
  await models.close();
}
