/**
 * How the Postgres BM25 pass's blocks travel (issue 11): the block statement of decision 034 run
 * as it is (postings as bytea, which the text protocol sends as hex: two characters a byte), with
 * the postings as base64 text (four characters for three bytes), and as one row per term (its
 * blocks' bounds and postings each concatenated by the server), on one store, in turn, over the
 * perf queries. Prints per form the wall time p50/p95 of the statement
 * (round trip, server, transfer and row parsing) with the postings decoded into bytes, the
 * client CPU per query, and the characters received per query. `size` raw nodes of the perf
 * corpus through `Memory.addSessions` into a fresh database first.
 *
 *   npx tsx bench/perf/postgres-block-wire.ts --size 100000 --queries 200 --rounds 3
 */
import { parseArgs } from "node:util";
import pg from "pg";
import { scopeKey } from "../../src/core/scope.ts";
import { queryLexemes } from "../../src/store/postgres/lexical-terms.ts";
import { blockQuery } from "../../src/store/postgres/search-lexical.ts";
import { poolTypes } from "../../src/store/postgres/tenant-transaction.ts";
import { generateQueries } from "./corpus.ts";
import { scope } from "./run-config.ts";
import { withPostgresCorpus } from "./run-postgres-config.ts";
import { percentile } from "./stats.ts";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "10000" },
    queries: { type: "string", default: "200" },
    rounds: { type: "string", default: "3" },
    batch: { type: "string", default: "50" },
  },
});

const forms = {
  hex: { sql: blockQuery("NULL::bigint[]"), decode: (value: unknown) => value as Buffer },
  base64: {
    sql: blockQuery("NULL::bigint[]").replace("b.postings,", "encode(b.postings, 'base64') AS postings,"),
    decode: (value: unknown) => Buffer.from(value as string, "base64"),
  },
  perTerm: {
    sql: `SELECT t.lexeme, t.df, b.meta, b.postings
      FROM unnest($3::text[]) AS q (lexeme)
      CROSS JOIN LATERAL (SELECT lexeme, df FROM lexical_terms WHERE tenant = $1 AND field = $4 AND lexeme = q.lexeme OFFSET 0) t
      CROSS JOIN LATERAL (
        SELECT string_agg(int8send(last_rowid) || int4send(max_tf) || int4send(min_length), ''::bytea ORDER BY block_start) AS meta,
          string_agg(postings, ''::bytea ORDER BY block_start) AS postings
        FROM lexical_blocks WHERE scope_key = $2 AND field = $4 AND lexeme = t.lexeme) b`,
    decode: (value: unknown) => value as Buffer,
  },
} as const;
type Form = keyof typeof forms;
const formOrder: Form[] = ["hex", "base64", "perTerm"];

await withPostgresCorpus(Number(values.size), Number(values.batch), async ({ url }) => {
  const client = new pg.Client({ connectionString: url, types: poolTypes });
  await client.connect();
  try {
    // How the server stores the blocks: their postings' bytes, and whether any went to TOAST.
    await client.query("BEGIN");
    await client.query("SELECT set_config('cairn.tenant', $1, true)", [scope.tenant]);
    const storage = await client.query(
      `SELECT count(*)::int AS blocks, avg(length(postings))::int AS bytes, avg(pg_column_size(postings))::int AS stored,
         pg_size_pretty(pg_relation_size('lexical_blocks')) AS heap,
         pg_size_pretty(coalesce(pg_relation_size((SELECT reltoastrelid FROM pg_class WHERE relname = 'lexical_blocks')), 0)) AS toast
       FROM lexical_blocks`,
    );
    await client.query("COMMIT");
    console.log(`lexical_blocks storage: ${JSON.stringify(storage.rows[0])}`);
    const queries = generateQueries(Number(values.queries)).map((query) => queryLexemes(query));
    const wall: Record<Form, number[]> = { hex: [], base64: [], perTerm: [] };
    const cpu: Record<Form, number[]> = { hex: [], base64: [], perTerm: [] };
    const characters: Record<Form, number> = { hex: 0, base64: 0, perTerm: 0 };
    let bytes = 0;
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const [index, lexemes] of queries.entries()) {
        const order: Form[] = (index + round) % 2 === 0 ? formOrder : [...formOrder].reverse();
        for (const form of order) {
          await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
          await client.query("SELECT set_config('cairn.tenant', $1, true)", [scope.tenant]);
          const cpuBefore = process.cpuUsage();
          const started = performance.now();
          const result = await client.query(forms[form].sql, [scope.tenant, scopeKey(scope), lexemes, "text"]);
          let received = 0;
          for (const row of result.rows) received += forms[form].decode(row.postings).length;
          const elapsed = performance.now() - started;
          const used = process.cpuUsage(cpuBefore);
          await client.query("COMMIT");
          if (round === 0) {
            bytes += form === "hex" ? received : 0;
            characters[form] += result.rows.reduce(
              (sum, row) =>
                sum +
                (form === "base64"
                  ? (row.postings as string).length
                  : 2 * ((row.postings as Buffer).length + ((row.meta as Buffer | undefined)?.length ?? 0))),
              0,
            );
          }
          wall[form].push(elapsed);
          cpu[form].push((used.user + used.system) / 1000);
        }
      }
    }
    const n = queries.length;
    console.log(`postings bytes per query: ${(bytes / n / 1024).toFixed(1)} KiB`);
    for (const form of formOrder) {
      console.log(
        `${form}: wall p50 ${percentile(wall[form], 50).toFixed(2)} / p95 ${percentile(wall[form], 95).toFixed(2)} ms, ` +
          `client CPU p50 ${percentile(cpu[form], 50).toFixed(2)} / p95 ${percentile(cpu[form], 95).toFixed(2)} ms, ` +
          `${(characters[form] / n / 1024).toFixed(1)} Ki characters a query`,
      );
    }
  } finally {
    await client.end();
  }
});
