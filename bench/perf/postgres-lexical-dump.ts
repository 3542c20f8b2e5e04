/**
 * BM25 results of the Postgres store on a generated corpus, for comparing two trees of the store
 * (before and after a change to the lexical tables): `size` raw nodes through `Memory.addSession`
 * into a fresh database, then `queries` generated queries on each lexical field, every hit's id
 * and score written as JSON lines. Raw-node ids are random per run, so each hit is written as its
 * position in ingest order (session key in the corpus and turn) instead.
 *
 *   npx tsx bench/perf/postgres-lexical-dump.ts --size 3000 --queries 200 --out /tmp/lexical-after.jsonl
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { openBenchPostgres } from "../../src/bench/postgres/bench-postgres.ts";
import { scopeKey } from "../../src/core/scope.ts";
import { Memory } from "../../src/memory.ts";
import { openPostgresStore } from "../../src/store/open-store.ts";
import { generateQueries, generateSessions, makeImagePool } from "./corpus.ts";
import { loadModels, scope } from "./run-config.ts";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "3000" },
    queries: { type: "string", default: "200" },
    out: { type: "string", default: "/tmp/lexical.jsonl" },
  },
});
const models = await loadModels("hash");
const postgres = await openBenchPostgres();
try {
  const store = await openPostgresStore({ url: await postgres.freshDatabase() });
  const memory = await Memory.open({ store, models });
  const positions = new Map<string, string>();
  try {
    const images = await makeImagePool(48);
    let index = 0;
    for (const session of generateSessions({ rawNodes: Number(values.size), imageShare: 0.05 }, images)) {
      const added = await memory.addSession(scope, session);
      for (const [turn, id] of added.rawNodeIds.entries()) positions.set(id, `${index}#${turn}`);
      index++;
    }
    const scoped = store.forScope(scope);
    const lines: string[] = [];
    for (const query of generateQueries(Number(values.queries))) {
      for (const field of ["text", "imageText"] as const) {
        const hits = await scoped.searchLexical(field, query, { limit: 50 });
        lines.push(
          JSON.stringify({
            query,
            field,
            hits: hits.map((hit) => [positions.get(hit.id), Number(hit.score.toFixed(9))]),
          }),
        );
      }
    }
    writeFileSync(values.out, `${lines.join("\n")}\n`);
    console.log(`${lines.length} searches of ${scopeKey(scope)} written to ${values.out}`);
  } finally {
    await memory.close();
  }
} finally {
  await models.close();
  await postgres.close();
}
