/**
 * What `cairn check`'s lexical verification costs on a kept store (decision 030, amended at stop 30):
 * every tenant's FTS5 integrity-check and its block index compared with FTS5's tokens, timed alone
 * (wall and CPU seconds, RSS at the end), with the problems it finds.
 *
 *   npx tsx bench/perf/lexical-verify.ts <store folder, e.g. a perf run's --keep store>
 */
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";

const path = process.argv[2];
if (!path) throw new Error("usage: lexical-verify.ts <store folder>");
const store = await SqliteStore.open({ path });
try {
  const tenants = [...new Set((await store.listScopes()).map((scope) => scope.tenant))];
  for (const tenant of tenants) {
    const started = performance.now();
    const cpu = process.cpuUsage();
    const problems = await store.verifyLexical(tenant);
    const used = process.cpuUsage(cpu);
    console.log(
      JSON.stringify({
        tenant,
        problems,
        wallS: (performance.now() - started) / 1000,
        cpuS: (used.user + used.system) / 1e6,
        rssMB: Math.round(process.memoryUsage().rss / 2 ** 20),
      }),
    );
  }
} finally {
  await store.close();
}
