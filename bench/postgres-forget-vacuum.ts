/**
 * What it would cost to clear forgotten bytes from a Postgres store's files (decision 009): a
 * store of `--sessions` two-turn sessions in one scope (hash models), then, three times each, a
 * forget of one session, a plain `VACUUM` of every Cairn table, and a `VACUUM FULL` of every Cairn
 * table; the median of three is reported. Plain VACUUM frees the dead tuples for reuse but leaves
 * their bytes in the pages; VACUUM FULL rewrites each table (ACCESS EXCLUSIVE: every tenant waits)
 * and is the only one that clears the relation files (test/memory/forget-residue-postgres.test.ts).
 *
 *   npx tsx bench/postgres-forget-vacuum.ts --url postgres://cairn_app@127.0.0.1:5432/bench --sessions 5000
 *
 * `--url` names an empty database with pgvector available, as a role that owns it.
 */
import { parseArgs } from "node:util";
import pg from "pg";
import { Memory } from "../src/memory.ts";
import { createHashModels } from "../src/models/hash-provider.ts";

const { values } = parseArgs({
  options: { url: { type: "string" }, sessions: { type: "string", default: "5000" } },
});
if (!values.url) throw new Error("--url postgres://… is required (an empty database with pgvector)");
const sessions = Number(values.sessions);
const words = ["kayak", "lantern", "orchard", "violin", "glacier", "teapot", "harbour", "train", "basil", "corgi"];
const scope = { tenant: "bench", user: "ana" };

const memory = await Memory.open({ path: values.url, models: createHashModels({ dimensions: 384 }) });
const loadStarted = performance.now();
for (let index = 0; index < sessions; index++) {
  const say = (turn: number) =>
    Array.from({ length: 12 }, (_, word) => words[(index * 7 + turn * 3 + word * word) % words.length]).join(" ");
  await memory.addSession(scope, {
    session: `s${index}`,
    time: new Date(Date.UTC(2024, 0, 1) + index * 60_000).toISOString(),
    turns: [
      { speaker: "Ana", text: `${say(0)} note ${index}` },
      { speaker: "Bo", text: `${say(1)} reply ${index}` },
    ],
  });
}
const loadSeconds = (performance.now() - loadStarted) / 1000;

const client = new pg.Client({ connectionString: values.url });
await client.connect();
const tables = (
  await client.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'")
).rows.map((row) => row.name);
const size = async () =>
  Number((await client.query<{ n: string }>("SELECT pg_database_size(current_database()) AS n")).rows[0]?.n ?? 0);
const timed = async (work: () => Promise<unknown>) => {
  const started = performance.now();
  await work();
  return performance.now() - started;
};
const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? Number.NaN;

const costs = { forget: [] as number[], vacuum: [] as number[], vacuumFull: [] as number[] };
for (let round = 0; round < 3; round++) {
  costs.forget.push(await timed(() => memory.forget(scope, { session: `s${round * 11}` })));
  costs.vacuum.push(
    await timed(async () => {
      for (const table of tables) await client.query(`VACUUM public."${table}"`);
    }),
  );
  costs.vacuumFull.push(
    await timed(async () => {
      for (const table of tables) await client.query(`VACUUM FULL public."${table}"`);
    }),
  );
}
console.log(
  `${sessions} sessions (${sessions * 2} raw nodes, 384-d) loaded in ${loadSeconds.toFixed(0)} s; database ${(
    (await size()) / 2 ** 20
  ).toFixed(0)} MiB`,
);
console.log("| step, after a forget of one session | median of 3, ms |");
console.log("|---|---|");
console.log(`| forget (one transaction) | ${median(costs.forget).toFixed(1)} |`);
console.log(`| VACUUM of all ${tables.length} tables | ${median(costs.vacuum).toFixed(1)} |`);
console.log(`| VACUUM FULL of all ${tables.length} tables | ${median(costs.vacuumFull).toFixed(1)} |`);
await client.end();
await memory.close();
