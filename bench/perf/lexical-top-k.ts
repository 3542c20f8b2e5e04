/**
 * The bounded lexical pass (decision 021) against FTS5 ranking every match, on a store kept by
 * `npm run bench:perf -- --profile hash --keep` and the perf run's 200 queries, alternating query by
 * query in one process so both see the same machine load. CPU milliseconds per pass (steadier than
 * wall time on a shared machine), documents ranked, and whether the two top-k lists agree:
 *
 *   npx tsx bench/perf/lexical-top-k.ts bench/results/tmp/hash-100000 [--limit 100] [--queries 200]
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import BetterSqlite3 from "better-sqlite3";
import { toPhrases } from "../../src/store/sqlite/fts-query.ts";
import { type LexicalPass, type LexicalTrace, rankAll, topLexical } from "../../src/store/sqlite/lexical-top-k.ts";
import { tenantStorage } from "../../src/store/sqlite/tenants.ts";
import { generateQueries } from "./corpus.ts";
import { scope } from "./run-config.ts";
import { latency } from "./stats.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { limit: { type: "string", default: "100" }, queries: { type: "string", default: "200" } },
});
const path = positionals[0];
if (!path) throw new Error("usage: lexical-top-k.ts <kept store folder> [--limit 100] [--queries 200]");
const db = new BetterSqlite3(join(path, "cairn.db"), { readonly: true });
const table = tenantStorage(scope.tenant).textTable;
const scopeKey = db.prepare("SELECT scope_key FROM raw_nodes LIMIT 1").pluck().get() as string;
const pass: LexicalPass = {
  db,
  table,
  scopeKey,
  scopeToken: null,
  filter: { sql: "", params: [] },
  limit: Number(values.limit),
};
const queries = generateQueries(Number(values.queries));

const cpu = (run: () => unknown) => {
  const before = process.cpuUsage();
  const result = run();
  const used = process.cpuUsage(before);
  return { ms: (used.user + used.system) / 1000, result };
};
for (const query of queries.slice(0, 20)) {
  topLexical(pass, toPhrases(query));
  rankAll(pass, toPhrases(query));
}
const exhaustive: number[] = [];
const bounded: number[] = [];
let same = 0;
let boundedQueries = 0;
let scored = 0;
let matched = 0;
for (const query of queries) {
  const phrases = toPhrases(query);
  const trace: LexicalTrace = { strategy: "exhaustive", rounds: 0, scored: 0 };
  const a = cpu(() => rankAll(pass, phrases));
  const b = cpu(() => topLexical(pass, phrases, trace));
  exhaustive.push(a.ms);
  bounded.push(b.ms);
  const scores = (list: unknown) => (list as { score: number }[]).map((hit) => hit.score.toFixed(9)).join();
  if (scores(a.result) === scores(b.result)) same++;
  const matches = db.prepare(`SELECT count(*) FROM ${table} WHERE ${table} MATCH ?`).pluck().get(phrases.join(" OR "));
  matched += matches as number;
  if (trace.strategy === "bounded") {
    boundedQueries++;
    scored += trace.scored;
  } else scored += matches as number;
}
console.log(
  JSON.stringify({
    store: path,
    rows: db.prepare(`SELECT count(*) FROM raw_nodes`).pluck().get(),
    limit: pass.limit,
    queries: queries.length,
    exhaustiveCpuMs: latency(exhaustive),
    boundedCpuMs: latency(bounded),
    sameScores: same,
    boundedQueries,
    documentsRankedPerQuery: { exhaustive: matched / queries.length, bounded: scored / queries.length },
  }),
);
db.close();
