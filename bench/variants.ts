/**
 * The routing variants behind docs/decisions/005 on a sample of histories (the full comparison of
 * registered methods is `npm run bench`):
 *
 *   npx tsx bench/variants.ts locomo 2        # dataset, histories (--limit), profile (default local)
 *   npx tsx bench/variants.ts mem-gallery 3
 *
 * Prints turn recall per variant; every variant reads the same replayed memory at the default budget.
 */

import type { DatasetName } from "../src/bench/datasets/index.ts";
import { loadDataset, resolveDataDir } from "../src/bench/datasets/index.ts";
import { storedIndexMethod } from "../src/bench/methods/index-methods.ts";
import { searchMethod } from "../src/bench/methods/search-method.ts";
import { runBench } from "../src/bench/run-bench.ts";
import { defaultBudget } from "../src/evidence/budget.ts";
import { createModels } from "../src/models/profiles.ts";
import { defaultSearchConfig } from "../src/route/search-config.ts";

const [dataset = "locomo", histories = "2", profile = "local"] = process.argv.slice(2);
const withRoute = ["bm25", "dense", "image", "route"] as const;
const methods = [
  searchMethod("tri-path", "direct channels, RRF", { mode: "tri-path" }),
  storedIndexMethod("route, RRF, λ=0.15", "", { mode: "route", routing: { fusion: "rrf", lambda: 0.15 } }),
  storedIndexMethod("route, RRF, λ=0", "", { mode: "route", routing: { fusion: "rrf", lambda: 0 } }),
  storedIndexMethod("route, sum, λ=0", "", { mode: "route", routing: { fusion: "sum", lambda: 0 } }),
  storedIndexMethod("both, RRF + route channel", "", { channels: withRoute, routing: { fusion: "rrf" } }),
  storedIndexMethod("both, sum + route channel", "", { channels: withRoute, routing: { fusion: "sum" } }),
  storedIndexMethod("both, sum (default)", "", {}),
  storedIndexMethod("both, sum, λ=0.05", "", { routing: { lambda: 0.05 } }),
  storedIndexMethod("both, sum, window 1", "", { routing: { window: 1 } }),
];
const models = await createModels(profile);
try {
  const data = await loadDataset(dataset as DatasetName, resolveDataDir(undefined), { limit: Number(histories) });
  const results = await runBench({
    dataset: data,
    methods,
    models,
    budget: defaultBudget,
    search: defaultSearchConfig,
  });
  console.log(`${dataset}, first ${histories} histories, ${profile} profile: turn recall`);
  for (const result of results) console.log(`${result.method.padEnd(28)} ${result.summary.recallTurn?.toFixed(3)}`);
} finally {
  await models.close();
}
