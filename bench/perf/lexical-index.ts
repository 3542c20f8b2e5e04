/**
 * The BM25 pass over Cairn's own lexical index (decision 030) against the FTS5 pass it replaces as
 * the default (decision 021's bounded FTS5 ranking), on a store kept by
 * `npm run bench:perf -- --profile hash --keep` and the perf run's 200 queries, alternating query by
 * query in one process so both see the same machine load. CPU milliseconds per pass (steadier than
 * wall time on a shared machine), blocks read, and whether the two top-k lists agree:
 *
 *   npx tsx bench/perf/lexical-index.ts /tmp/lex-perf/tmp/hash-100000 [--limit 100] [--queries 200]
 */
import { parseArgs } from "node:util";
import { scopeKey } from "../../src/core/scope.ts";
import { createScopeContext } from "../../src/store/sqlite/scope-context.ts";
import { type SearchLexicalTrace, searchLexical, useLexicalPass } from "../../src/store/sqlite/search-lexical.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { generateQueries } from "./corpus.ts";
import { scope } from "./run-config.ts";
import { latency } from "./stats.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { limit: { type: "string", default: "100" }, queries: { type: "string", default: "200" } },
});
const path = positionals[0];
if (!path) throw new Error("usage: lexical-index.ts <kept store folder> [--limit 100] [--queries 200]");
const store = SqliteStore.openReader({ path });
const context = createScopeContext(store.db, scopeKey(scope), store);
const limit = Number(values.limit);
const queries = generateQueries(Number(values.queries));

const run = (pass: "index" | "fts5", query: string) => {
  useLexicalPass(pass);
  const trace: SearchLexicalTrace = {};
  const before = process.cpuUsage();
  const hits = searchLexical(context, "text", query, { limit }, trace);
  const used = process.cpuUsage(before);
  return { ms: (used.user + used.system) / 1000, hits, trace };
};
for (const query of queries.slice(0, 20)) {
  run("fts5", query);
  run("index", query);
}
const fts5: number[] = [];
const index: number[] = [];
let same = 0;
let sameIds = 0;
let sameAboveCut = 0;
let decoded = 0;
let blocks = 0;
let scored = 0;
const passes: Record<string, number> = {};
for (const query of queries) {
  const a = run("fts5", query);
  const b = run("index", query);
  fts5.push(a.ms);
  index.push(b.ms);
  const equal =
    a.hits.length === b.hits.length &&
    a.hits.every((hit, position) => Math.abs(hit.score - (b.hits[position]?.score ?? Number.NaN)) < 1e-9);
  if (equal) same++;
  const ids = (list: typeof a.hits) =>
    list
      .map((hit) => hit.id)
      .sort()
      .join();
  if (ids(a.hits) === ids(b.hits)) sameIds++;
  // Ids may differ only among equal scores: above the score at the cut, each score's ids must agree.
  const cut = a.hits.at(-1)?.score ?? Number.NEGATIVE_INFINITY;
  const above = (list: typeof a.hits) => ids(list.filter((hit) => hit.score > cut + 1e-9));
  if (above(a.hits) === above(b.hits)) sameAboveCut++;
  passes[b.trace.pass ?? "none"] = (passes[b.trace.pass ?? "none"] ?? 0) + 1;
  decoded += b.trace.walk?.decoded ?? 0;
  blocks += b.trace.walk?.blocks ?? 0;
  scored += b.trace.walk?.scored ?? 0;
}
console.log(
  JSON.stringify({
    store: path,
    rows: store.db.prepare("SELECT count(*) FROM raw_nodes").pluck().get(),
    limit,
    queries: queries.length,
    fts5CpuMs: latency(fts5),
    indexCpuMs: latency(index),
    sameScores: same,
    sameIdSets: sameIds,
    sameIdSetsAboveTheCut: sameAboveCut,
    passes,
    perQuery: { blocks: blocks / queries.length, decoded: decoded / queries.length, scored: scored / queries.length },
  }),
);
await store.close();
