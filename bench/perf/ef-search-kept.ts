/**
 * ef_search on a store kept by `npm run bench:perf -- --keep` (hash profile): the dense channel's
 * top 10 through the store's own persisted HNSW index, opened once per `ef` (ef_search is not part
 * of the graph, so the same file serves every value), against an exact scan of the same vectors.
 * Prints per ef the recall@10 (ties count as hits) and the search's p50/p95; the exact top 10 is
 * computed once. For the recall/latency trade at sizes where building a graph per setting
 * (`bench/ann-sweep.ts`) takes too long.
 *
 *   npx tsx bench/perf/ef-search-kept.ts <kept store> --ef 512,1024,2048 --queries 200
 */
import { parseArgs } from "node:util";
import { createModels } from "../../src/models/profiles.ts";
import { vectorSpaces } from "../../src/models/vector-spaces.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { defaultVectorIndexOptions } from "../../src/store/vector-index-options.ts";
import { generateQueries } from "./corpus.ts";
import { embedAll, readMatrix, scope } from "./run-config.ts";
import { bruteForceTopK, exactScorer, latency, recallAtK, rowsByKey } from "./stats.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { ef: { type: "string", default: "512,1024,2048" }, queries: { type: "string", default: "200" } },
});
const path = positionals[0];
if (!path) throw new Error("usage: ef-search-kept.ts <kept store folder> [--ef 512,1024] [--queries 200]");
const models = await createModels("hash");
const queries = generateQueries(Number(values.queries));
const vectors = await embedAll(models, queries);

// The text space's name from the models, as `Memory` names it: opening a Memory only to read it left one unclosed.
const space = vectorSpaces(models).text.name;
const reference = await SqliteStore.open({ path });
const matrix = readMatrix(reference, space);
await reference.close();
const rowOf = rowsByKey(matrix);
const exact = vectors.map((vector) => bruteForceTopK(matrix, vector, 10));
console.log(`${matrix.keys.length} vectors, ${queries.length} queries, exact top 10 computed`);

for (const ef of values.ef.split(",").map(Number)) {
  const store = await SqliteStore.open({
    path,
    vectorIndex: { hnsw: { ...defaultVectorIndexOptions.hnsw, expansionSearch: ef, expansionSearchSteps: [] } },
  });
  try {
    await store.vectorIndexes.ready(space, scope);
    const scoped = store.forScope(scope);
    for (const vector of vectors.slice(0, 20)) await scoped.searchVectors(space, vector, { limit: 10 });
    const samples: number[] = [];
    let recall = 0;
    for (const [index, vector] of vectors.entries()) {
      const started = performance.now();
      const hits = await scoped.searchVectors(space, vector, { limit: 10 });
      samples.push(performance.now() - started);
      recall += recallAtK(
        hits.map((hit) => hit.id),
        exact[index] ?? [],
        exactScorer(matrix, rowOf, vector),
      );
    }
    const { p50, p95 } = latency(samples);
    console.log(
      `ef_search ${ef}: recall@10 ${(recall / vectors.length).toFixed(3)}, top 10 p50 ${p50.toFixed(2)} / p95 ${p95.toFixed(2)} ms`,
    );
  } finally {
    await store.close();
  }
}
await models.close();
