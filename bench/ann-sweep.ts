/**
 * The ANN parameter sweep behind the SQLite store's HNSW settings: recall@10 against an exact scan
 * and search latency for each (connectivity M, ef_search), on the perf benchmark's generated corpus
 * embedded by the hash profile (hashed n-grams: short queries far from every document, the hard
 * case for a graph index), through the store's own `VectorIndex` (deduplicated keys, f32).
 *
 *   npx tsx bench/ann-sweep.ts                          # 100,000 vectors, M 16 and 32, ef 16…512
 *   npx tsx bench/ann-sweep.ts --size 10000 --out /tmp  # elsewhere, for a quick look
 *   npx tsx bench/ann-sweep.ts --store <kept perf store> --connectivity 32 --ef 256,512 --out /tmp/sweep
 *
 * With `--store` (a store kept by `npm run bench:perf -- --keep`) the vectors are the ones the store's
 * dense channel searches (each raw node's contextual index text, embedded at ingest) instead of the raw
 * generated turns; `--size` is then the store's.
 *
 * Writes `<out>/ann-sweep.json` and `<out>/ann-sweep.md`. Ties count as hits (see `recallAtK`).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createModels } from "../src/models/profiles.ts";
import { vectorSpaces } from "../src/models/vector-spaces.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { type HnswOptions, VectorIndex } from "../src/store/vector-index.ts";
import { defaultVectorIndexOptions } from "../src/store/vector-index-options.ts";
import { corpusTexts, generateQueries } from "./perf/corpus.ts";
import { readMatrix } from "./perf/run-config.ts";
import { bruteForceTopK, dot, latency, recallAtK } from "./perf/stats.ts";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "100000" },
    queries: { type: "string", default: "200" },
    connectivity: { type: "string", default: "16,32" },
    ef: { type: "string", default: "16,32,64,96,128,192,256,512" },
    out: { type: "string", default: "bench/results" },
    store: { type: "string" },
  },
});
const k = 10;
const out = resolve(values.out);
mkdirSync(out, { recursive: true });

const models = await createModels("hash");
const dimensions = models.text.dimensions;
const matrix = values.store ? await storeMatrix(values.store) : await corpusMatrix(Number(values.size));
const size = matrix.length / dimensions;
const queries = await models.text.embed(generateQueries(Number(values.queries)));
const keys = Array.from({ length: size }, (_, row) => String(row + 1));
const exact = queries.map((query) => bruteForceTopK({ keys, dimensions, values: matrix }, query, k));
const scoreOf = (query: Float32Array) => (key: string) => dot(query, matrix, (Number(key) - 1) * dimensions);
const rowids = Array.from({ length: size }, (_, row) => row + 1);

const folder = mkdtempSync(join(os.tmpdir(), "cairn-ann-sweep-"));
const rows: { connectivity: number; ef: number; buildSeconds: number; recallAt10: number; p50: number; p95: number }[] =
  [];
try {
  for (const connectivity of values.connectivity.split(",").map(Number)) {
    const hnsw: HnswOptions = { ...defaultVectorIndexOptions.hnsw, connectivity };
    const started = performance.now();
    const built = VectorIndex.create(dimensions, hnsw);
    built.upsert(rowids, matrix);
    const buildSeconds = (performance.now() - started) / 1000;
    const path = join(folder, `m${connectivity}.usearch`);
    built.save(path);
    for (const ef of values.ef.split(",").map(Number)) {
      // ef_search is fixed when an index is opened: the saved graph is opened once per setting.
      const index = VectorIndex.load(path, {
        dimensions,
        hnsw: { ...hnsw, expansionSearch: ef, expansionSearchSteps: [] },
        maxRowid: size,
      });
      for (const query of queries.slice(0, 20)) index.search(query, k);
      const samples: number[] = [];
      let recall = 0;
      queries.forEach((query, position) => {
        const begun = performance.now();
        const found = index.search(query, k);
        samples.push(performance.now() - begun);
        recall += recallAtK(
          found.map((hit) => String(hit.rowid)),
          exact[position] ?? [],
          scoreOf(query),
        );
      });
      const timing = latency(samples);
      const row = { connectivity, ef, buildSeconds, recallAt10: recall / queries.length, ...timing };
      rows.push(row);
      console.log(JSON.stringify(row));
    }
  }
} finally {
  rmSync(folder, { recursive: true, force: true });
  await models.close();
}

const machine = `${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores, load average ${os
  .loadavg()
  .map((value) => value.toFixed(1))
  .join(" ")} at the end`;
const command = `npx tsx bench/ann-sweep.ts ${process.argv.slice(2).join(" ")}`.trim();
writeFileSync(
  join(out, "ann-sweep.json"),
  `${JSON.stringify({ command, machine, date: new Date().toISOString(), size, k, rows }, null, 2)}\n`,
);
const table = [
  "# HNSW sweep: recall@10 against the exact scan, and search latency",
  "",
  `- command: \`${command}\``,
  `- corpus: ${size.toLocaleString("en-US")} ${values.store ? "raw nodes' stored text vectors of the kept store" : "generated turns (bench/perf/corpus.ts)"}, hash profile, ${dimensions}-d; ${queries.length} queries, k = ${k}`,
  `- index: the store's VectorIndex (usearch HNSW, cosine, f32, expansion_add ${defaultVectorIndexOptions.hnsw.expansionAdd}, identical vectors deduplicated)`,
  `- machine: ${machine}; timings are one search at a time on one thread`,
  `- date: ${new Date().toISOString()}`,
  "",
  "| M | ef_search | recall@10 | p50 ms | p95 ms | build s |",
  "| ---: | ---: | ---: | ---: | ---: | ---: |",
  ...rows.map(
    (row) =>
      `| ${row.connectivity} | ${row.ef} | ${row.recallAt10.toFixed(3)} | ${row.p50.toFixed(3)} | ${row.p95.toFixed(3)} | ${row.buildSeconds.toFixed(1)} |`,
  ),
  "",
];
writeFileSync(join(out, "ann-sweep.md"), table.join("\n"));
console.log(`wrote ${join(out, "ann-sweep.md")}`);

/** The raw generated turns, embedded here. */
async function corpusMatrix(count: number): Promise<Float32Array> {
  const texts = corpusTexts({ rawNodes: count });
  const out = new Float32Array(count * dimensions);
  for (let start = 0; start < count; start += models.text.maxBatchSize) {
    const batch = await models.text.embed(texts.slice(start, start + models.text.maxBatchSize));
    batch.forEach((vector, offset) => {
      out.set(vector, (start + offset) * dimensions);
    });
  }
  return out;
}

/** The text vectors a kept perf store's dense channel searches. */
async function storeMatrix(path: string): Promise<Float32Array> {
  const store = await SqliteStore.open({ path });
  try {
    return readMatrix(store, vectorSpaces(models).text.name).values;
  } finally {
    await store.close();
  }
}
