/**
 * The Postgres store's searches with and without decision 036's one-round-trip path, on one store
 * at one moment: `size` raw nodes of the perf corpus through `Memory.addSessions` into a fresh
 * database (graphs built), then each perf query timed with the one-trip path on and off in turn
 * (alternating which goes first): the default `cairn` search, the dense pass at top 400 and the
 * BM25 pass at top 100 (a routed search's depths). Prints p50/p95 wall and this process's CPU per
 * call, and checks that both paths give the same ids (dense scores within 1e-5).
 *
 *   npx tsx bench/perf/postgres-search-trips.ts --size 100000 --queries 200 --out bench/results/postgres-p95-s31/trips.json
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { Ranked } from "../../src/core/ranked.ts";
import { usePostgresOneTripSearch } from "../../src/store/postgres/one-trip-reads.ts";
import { generateQueries } from "./corpus.ts";
import { embedAll, scope } from "./run-config.ts";
import { withPostgresCorpus } from "./run-postgres-config.ts";
import { latency, sameUpToTies } from "./stats.ts";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "10000" },
    queries: { type: "string", default: "200" },
    batch: { type: "string", default: "32" },
    /** Times through the queries (each query on both paths each time). */
    rounds: { type: "string", default: "1" },
    out: { type: "string" },
  },
});

type Path = "oneTrip" | "transaction";
type Pass = "cairn" | "dense400" | "bm25_100";
const passes: Pass[] = ["cairn", "dense400", "bm25_100"];

await withPostgresCorpus(
  Number(values.size),
  Number(values.batch),
  async ({ store, memory, models, ingestSeconds }) => {
    for (const space of [memory.spaces.text.name, memory.spaces.imageText.name]) {
      if ((await store.vectorSpaces()).some((known) => known.name === space))
        await store.vectorIndexReady(space, scope);
    }
    const scoped = store.forScope(scope);
    const queries = generateQueries(Number(values.queries));
    const vectors = await embedAll(models, queries);
    const space = memory.spaces.text.name;
    const run = async (pass: Pass, index: number): Promise<Ranked[]> => {
      const query = queries[index] as string;
      if (pass === "cairn") {
        await memory.search(scope, query, { mode: "cairn" });
        return [];
      }
      if (pass === "dense400") return scoped.searchVectors(space, vectors[index] as Float32Array, { limit: 400 });
      return scoped.searchLexical("text", query, { limit: 100 });
    };
    // Warm-up: every connection of the pool prepared, caches filled, on both paths.
    for (const on of [true, false]) {
      usePostgresOneTripSearch(on);
      for (let index = 0; index < Math.min(20, queries.length); index++)
        for (const pass of passes) await run(pass, index);
    }
    const wall: Record<Path, Record<Pass, number[]>> = {
      oneTrip: { cairn: [], dense400: [], bm25_100: [] },
      transaction: { cairn: [], dense400: [], bm25_100: [] },
    };
    const cpu: Record<Path, Record<Pass, number[]>> = {
      oneTrip: { cairn: [], dense400: [], bm25_100: [] },
      transaction: { cairn: [], dense400: [], bm25_100: [] },
    };
    let differing = 0;
    const oneTripBefore = store.vectorIndexOneTripAnswers();
    const rounds = Number(values.rounds);
    for (const index of Array.from({ length: queries.length * rounds }, (_, at) => at % queries.length)) {
      for (const pass of passes) {
        const order: Path[] = index % 2 === 0 ? ["oneTrip", "transaction"] : ["transaction", "oneTrip"];
        const answers: Partial<Record<Path, Ranked[]>> = {};
        for (const path of order) {
          usePostgresOneTripSearch(path === "oneTrip");
          const cpuBefore = process.cpuUsage();
          const wallBefore = performance.now();
          answers[path] = await run(pass, index);
          wall[path][pass].push(performance.now() - wallBefore);
          const used = process.cpuUsage(cpuBefore);
          cpu[path][pass].push((used.user + used.system) / 1000);
        }
        const [a, b] = [answers.oneTrip ?? [], answers.transaction ?? []];
        if (!sameUpToTies(a, b, 1e-5)) {
          differing++;
          if (process.env.TRIPS_DEBUG) {
            const firstDiff = a.findIndex((hit, rank) => hit.id !== b[rank]?.id);
            console.log(pass, index, a.length, b.length, firstDiff, a[firstDiff], b[firstDiff]);
          }
        }
      }
    }
    usePostgresOneTripSearch(true);
    const summary = (samples: Record<Pass, number[]>) =>
      Object.fromEntries(passes.map((pass) => [pass, latency(samples[pass])]));
    const result = {
      size: Number(values.size),
      queries: queries.length,
      rounds,
      ingestSeconds,
      oneTripDenseAnswers: store.vectorIndexOneTripAnswers() - oneTripBefore,
      differingAnswers: differing,
      wallMs: { oneTrip: summary(wall.oneTrip), transaction: summary(wall.transaction) },
      clientCpuMs: { oneTrip: summary(cpu.oneTrip), transaction: summary(cpu.transaction) },
      date: new Date().toISOString(),
    };
    console.log(JSON.stringify(result, null, 2));
    if (values.out) writeFileSync(values.out, `${JSON.stringify(result, null, 2)}\n`);
  },
);
