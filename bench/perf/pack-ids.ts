/**
 * The default search's packs on a store kept by `npm run bench:perf -- --keep` (hash profile), as
 * JSON: per perf query, each item's raw-node id and score. Run from two checkouts and compared with
 * `cmp`, it shows whether a change to the read path changed any answer.
 *
 *   npx tsx bench/perf/pack-ids.ts <kept store> 100 > /tmp/packs-after.json
 */
import { Memory } from "../../src/memory.ts";
import { createModels } from "../../src/models/profiles.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { generateQueries } from "./corpus.ts";
import { scope } from "./run-config.ts";

const path = process.argv[2];
if (!path) throw new Error("usage: pack-ids.ts <kept store folder> [queries]");
const models = await createModels("hash");
const store = await SqliteStore.open({ path });
const memory = await Memory.open({ store, models });
const packs: string[][] = [];
for (const query of generateQueries(Number(process.argv[3] ?? 100))) {
  const pack = await memory.search(scope, query, {});
  packs.push(pack.items.map((item) => `${item.rawNodeId} ${item.score.toFixed(6)}`));
}
console.log(JSON.stringify(packs));
await memory.close();
await models.close();
