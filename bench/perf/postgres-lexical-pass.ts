/**
 * The Postgres store's two BM25 passes side by side on one store (decision 034): `size` raw nodes
 * of the perf corpus through `Memory.addSessions` into a fresh database, then the perf queries on
 * the text field, each query timed on the block-max pass and on the exhaustive SQL pass in turn
 * (alternating which goes first), at top 10 and top 100; prints p50/p95 per pass and the walk's
 * trace (blocks fetched, decoded, documents scored), and checks that both passes agree (the same ids,
 * or the same up to ties within 1e-9). `--passes index` times the block-max pass alone (the
 * exhaustive one decodes every block in SQL: seconds a query at 100k).
 *
 *   npx tsx bench/perf/postgres-lexical-pass.ts --size 10000 --queries 200
 */
import { parseArgs } from "node:util";
import pg from "pg";
import type { Ranked } from "../../src/core/ranked.ts";
import { scopeKey } from "../../src/core/scope.ts";
import type { PostgresScopedStore } from "../../src/store/postgres/postgres-scoped-store.ts";
import {
  blockQuery,
  type PostgresLexicalTrace,
  usePostgresLexicalPass,
} from "../../src/store/postgres/search-lexical.ts";
import { generateQueries } from "./corpus.ts";
import { scope } from "./run-config.ts";
import { withPostgresCorpus } from "./run-postgres-config.ts";
import { percentile, sameUpToTies } from "./stats.ts";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "10000" },
    queries: { type: "string", default: "200" },
    rounds: { type: "string", default: "2" },
    batch: { type: "string", default: "1" },
    explain: { type: "boolean", default: false },
    /** Which passes to time: `index,sql` (and compare them), or one of them. */
    passes: { type: "string", default: "index,sql" },
  },
});
const passes = values.passes.split(",");
await withPostgresCorpus(Number(values.size), Number(values.batch), async ({ url, store }) => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const blockStats = async () =>
    (
      await client.query(
        `SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd, n_dead_tup, n_live_tup,
             pg_size_pretty(pg_table_size('lexical_blocks')) AS heap, pg_size_pretty(pg_indexes_size('lexical_blocks')) AS index
           FROM pg_stat_user_tables WHERE relname = 'lexical_blocks'`,
      )
    ).rows[0];
  console.log("lexical_blocks", JSON.stringify(await blockStats()));
  if (values.explain) {
    await client.query("BEGIN");
    await client.query("SELECT set_config('cairn.tenant', $1, true)", [scope.tenant]);
    const plan = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${blockQuery("NULL::bigint[]")}`, [
      scope.tenant,
      scopeKey(scope),
      generateQueries(1)[0],
      "text",
    ]);
    console.log(plan.rows.map((row) => row["QUERY PLAN"]).join("\n"));
    await client.query("COMMIT");
  }
  await client.end();
  const scoped = store.forScope(scope) as PostgresScopedStore;
  const queries = generateQueries(Number(values.queries));
  for (const limit of [10, 100]) {
    const times = { index: [] as number[], sql: [] as number[] };
    const traces = { blocks: 0, decoded: 0, scored: 0 };
    const parts = { fetch: [] as number[], walk: [] as number[], ids: [] as number[] };
    let differing = 0;
    let beyondTies = 0;
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const [index, query] of queries.entries()) {
        const both = (index + round) % 2 === 0 ? (["index", "sql"] as const) : (["sql", "index"] as const);
        const order = both.filter((pass) => passes.includes(pass));
        const results: Record<string, Ranked[]> = {};
        for (const pass of order) {
          usePostgresLexicalPass(pass);
          const trace: PostgresLexicalTrace = {};
          const at = performance.now();
          const hits = await scoped.searchLexical("text", query, { limit }, trace);
          times[pass].push(performance.now() - at);
          results[pass] = hits;
          if (pass === "index" && round === 0) {
            traces.blocks += trace.blocks ?? 0;
            traces.decoded += trace.decoded ?? 0;
            traces.scored += trace.scored ?? 0;
            parts.fetch.push(trace.fetchMs ?? 0);
            parts.walk.push(trace.walkMs ?? 0);
            parts.ids.push(trace.idsMs ?? 0);
          }
        }
        const [walked = [], exhaustive = []] = [results.index, results.sql];
        if (order.length < 2) continue;
        if (walked.map((hit) => hit.id).join() !== exhaustive.map((hit) => hit.id).join()) differing++;
        if (!sameUpToTies(walked, exhaustive, 1e-9)) {
          beyondTies++;
          console.log(`differs beyond ties: "${query}" top ${limit}`);
        }
      }
    }
    const line = (pass: "index" | "sql") =>
      times[pass].length === 0
        ? `${pass} not run`
        : `${pass} p50 ${percentile(times[pass], 50).toFixed(2)} / p95 ${percentile(times[pass], 95).toFixed(2)} ms`;
    const n = queries.length;
    const part = (name: keyof typeof parts) =>
      `${name} ${percentile(parts[name], 50).toFixed(2)} / ${percentile(parts[name], 95).toFixed(2)}`;
    if (parts.fetch.length > 0) {
      console.log(`top ${limit} block-max parts p50 / p95 ms: ${part("fetch")}, ${part("walk")}, ${part("ids")}`);
    }
    console.log(
      `top ${limit}: ${line("index")}; ${line("sql")}; per query: blocks ${(traces.blocks / n).toFixed(0)}, decoded ${(traces.decoded / n).toFixed(0)}, scored ${(traces.scored / n).toFixed(0)}; id lists differing ${differing} (${beyondTies} beyond ties of 1e-9)`,
    );
  }
});
