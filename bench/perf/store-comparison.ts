import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PerfResult } from "./run-config.ts";
import type { PostgresPerfResult } from "./run-postgres-config.ts";

/** One (profile, size) measured on both stores in the same `bench:perf` run, and the ratios the issue targets. */
export interface StoreComparison {
  readonly profile: string;
  readonly size: number;
  readonly sqlite: Pick<PerfResult, "date" | "ingest" | "search" | "triPath" | "recallAt10"> & {
    readonly channels: Pick<
      PerfResult["channels"],
      "denseMs" | "bm25Ms" | "imageTextBm25Ms" | "denseDeepMs" | "bm25DeepMs"
    >;
  };
  readonly postgres: PostgresPerfResult;
  /** Postgres ÷ SQLite. Targets (issue 11): search p95 ≤ 2, ingest ≥ 0.5. */
  readonly ratios: { readonly ingest: number; readonly searchP95: number; readonly triPathP95: number | null };
  readonly target: { readonly searchP95AtMost: 2; readonly ingestAtLeast: 0.5; readonly met: boolean };
}

export function postgresResultFile(profile: string, size: number): string {
  return `postgres-perf-${profile}-${size}.json`;
}

export function writePostgresResult(folder: string, result: PostgresPerfResult): string {
  const path = join(folder, postgresResultFile(result.profile, result.size));
  writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`);
  return path;
}

/** Pairs the SQLite and Postgres results of one (profile, size) just written by the same run. */
export function compareStores(folder: string, profile: string, size: number): StoreComparison | undefined {
  const sqlitePath = join(folder, `perf-${profile}-${size}.json`);
  const postgresPath = join(folder, postgresResultFile(profile, size));
  if (!existsSync(sqlitePath) || !existsSync(postgresPath)) return undefined;
  const sqlite = JSON.parse(readFileSync(sqlitePath, "utf8")) as PerfResult;
  const postgres = JSON.parse(readFileSync(postgresPath, "utf8")) as PostgresPerfResult;
  const ingest = postgres.ingest.rawNodesPerSecond / sqlite.ingest.rawNodesPerSecond;
  const searchP95 = postgres.search.searchMs.p95 / sqlite.search.searchMs.p95;
  const triPathP95 = sqlite.triPath ? postgres.triPath.searchMs.p95 / sqlite.triPath.searchMs.p95 : null;
  const comparison: StoreComparison = {
    profile,
    size,
    sqlite: {
      date: sqlite.date,
      ingest: sqlite.ingest,
      search: sqlite.search,
      triPath: sqlite.triPath,
      recallAt10: sqlite.recallAt10,
      channels: {
        denseMs: sqlite.channels.denseMs,
        bm25Ms: sqlite.channels.bm25Ms,
        imageTextBm25Ms: sqlite.channels.imageTextBm25Ms,
        ...(sqlite.channels.denseDeepMs ? { denseDeepMs: sqlite.channels.denseDeepMs } : {}),
        ...(sqlite.channels.bm25DeepMs ? { bm25DeepMs: sqlite.channels.bm25DeepMs } : {}),
      },
    },
    postgres,
    ratios: { ingest, searchP95, triPathP95 },
    target: { searchP95AtMost: 2, ingestAtLeast: 0.5, met: searchP95 <= 2 && ingest >= 0.5 },
  };
  writeFileSync(
    join(folder, `postgres-perf-vs-sqlite-${profile}-${size}.json`),
    `${JSON.stringify(comparison, null, 2)}\n`,
  );
  return comparison;
}

/** `postgres-perf.md`, regenerated from every `postgres-perf-vs-sqlite-*.json` in the folder. */
export function writeStoreMarkdown(folder: string): string {
  const comparisons = readdirSync(folder)
    .filter((name) => /^postgres-perf-vs-sqlite-[a-z]+-\d+\.json$/.test(name))
    .map((name) => JSON.parse(readFileSync(join(folder, name), "utf8")) as StoreComparison)
    .sort((left, right) => left.profile.localeCompare(right.profile) || left.size - right.size);
  const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(value < 10 ? 2 : 1) : "–");
  const whole = (value: number) => Math.round(value).toLocaleString("en-US");
  const ratio = (value: number | null) => (value === null || !Number.isFinite(value) ? "–" : value.toFixed(2));
  const rows = comparisons.flatMap((comparison) => {
    const { sqlite, postgres } = comparison;
    const row = (
      store: string,
      side: {
        ingest: { rawNodesPerSecond: number };
        search: PerfResult["search"];
        triPath?: PerfResult["triPath"];
        channels: Pick<PerfResult["channels"], "denseMs" | "bm25Ms">;
        recallAt10: number;
      },
    ) =>
      `| ${comparison.profile} | ${whole(comparison.size)} | ${store} | ${whole(side.ingest.rawNodesPerSecond)} | ${ms(side.search.searchMs.p50)} | ${ms(side.search.searchMs.p95)} | ${side.triPath ? ms(side.triPath.searchMs.p50) : "–"} | ${side.triPath ? ms(side.triPath.searchMs.p95) : "–"} | ${ms(side.channels.denseMs.p95)} | ${ms(side.channels.bm25Ms.p95)} | ${side.recallAt10.toFixed(3)} |`;
    return [
      row("SQLite", sqlite),
      row("Postgres", postgres),
      `| | | **Postgres ÷ SQLite** | **${ratio(comparison.ratios.ingest)}** | | **${ratio(comparison.ratios.searchP95)}** | | ${ratio(comparison.ratios.triPathP95)} | | | ${comparison.target.met ? "target met" : "target NOT met"} |`,
    ];
  });
  const first = comparisons[0]?.postgres;
  const lines = [
    "# Cairn performance: Postgres beside SQLite",
    "",
    "Regenerated by `bench/perf.ts --store postgres` from the `postgres-perf-vs-sqlite-<profile>-<size>.json` files beside it:",
    "each (profile, size) runs on SQLite and then on Postgres in the same run, same corpus and queries (see `perf.md` for",
    "what each column measures).",
    "",
    ...(first
      ? [
          `- commands: ${[...new Set(comparisons.map((comparison) => `\`${comparison.postgres.command}\``))].join("; ")}`,
          `- machine: ${first.machine.cpu}, ${first.machine.cores} cores, ${first.machine.os}; node ${first.machine.node} (the Postgres server shares these cores with the bench process)`,
          `- Postgres: ${first.server}; vector search ${JSON.stringify(first.vectorSearch)} (exact scan below \`exactBelow\` vectors per scope, else ${first.vectorIndex?.hnsw ? `the in-process usearch index, M ${first.vectorIndex.hnsw.connectivity} / ef_construction ${first.vectorIndex.hnsw.expansionAdd} / ef_search ${first.vectorIndex.hnsw.expansionSearch}, candidates scored exactly (decision 025)` : "pgvector HNSW + iterative scan"})`,
          `- dates: ${comparisons.map((comparison) => `${comparison.profile} ${comparison.size}: ${comparison.postgres.date}`).join("; ")}`,
        ]
      : []),
    "",
    "Targets (issue 11): Postgres search p95 ≤ 2× SQLite's in the same run, ingest ≥ 0.5× SQLite's.",
    "ANN recall@10: SQLite against an exact JS scan (ties count as hits); Postgres against its own exact scan of the scope (first `--exact-queries` queries, no tie handling).",
    "",
    ...comparisons.flatMap((comparison) => {
      const floor = comparison.postgres.channels.transactionFloorMs;
      const deep = (side: {
        channels: { denseDeepMs?: { p50: number; p95: number }; bm25DeepMs?: { p50: number; p95: number } };
      }) =>
        side.channels.denseDeepMs && side.channels.bm25DeepMs
          ? `dense top 400 p50 ${ms(side.channels.denseDeepMs.p50)} / p95 ${ms(side.channels.denseDeepMs.p95)}, BM25 top 100 p50 ${ms(side.channels.bm25DeepMs.p50)} / p95 ${ms(side.channels.bm25DeepMs.p95)} ms`
          : "not measured";
      const exactScan = comparison.postgres.channels.exactScanMs;
      return [
        `- ${comparison.profile} ${whole(comparison.size)}, the direct passes of a routed (\`cairn\`) search: SQLite ${deep(comparison.sqlite)}; Postgres ${deep(comparison.postgres)}`,
        `- ${comparison.profile} ${whole(comparison.size)}: Postgres per-call floor (a seam call reading nothing: pool, BEGIN + tenant wall, a statement returning no row, COMMIT) ${floor ? `p50 ${ms(floor.p50)} / p95 ${ms(floor.p95)} ms` : "not measured"}; exact scan of the scope p50 ${ms(exactScan.p50)} / p95 ${ms(exactScan.p95)} ms; dense recall@10 with ties counted ${comparison.postgres.recallAt10Ties === undefined ? "not measured" : comparison.postgres.recallAt10Ties.toFixed(3)}${comparison.postgres.indexBuildSeconds === undefined ? "" : `; in-process ANN index built in ${comparison.postgres.indexBuildSeconds.toFixed(1)} s after the ingest (SQLite's: see its run)`}`,
      ];
    }),
    "",
    "| profile | raw nodes | store | ingest nodes/s | search p50 ms | search p95 ms | tri-path p50 ms | tri-path p95 ms | dense p95 ms | BM25 p95 ms | ANN recall@10 |",
    "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...rows,
    "",
  ];
  const path = join(folder, "postgres-perf.md");
  writeFileSync(path, lines.join("\n"));
  return path;
}
