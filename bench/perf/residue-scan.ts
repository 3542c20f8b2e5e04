/**
 * The forget erasure's scan alone (decision 038) on an existing store: `scanForResidue` over
 * `<store>/cairn.db` with the ids and texts of `count` random raw nodes as needles (live values,
 * so any hit is a live key in an interior index page), `rounds` times; prints each scan's time
 * and pages. Open no writer on the store meanwhile.
 *
 *   npx tsx bench/perf/residue-scan.ts <store folder> [count] [rounds]
 */
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { residueNeedles, scanForResidue } from "../../src/store/sqlite/residue-scan.ts";

const [folder, count = "20", rounds = "2"] = process.argv.slice(2);
if (!folder) throw new Error("usage: residue-scan.ts <store folder> [count] [rounds]");
const path = join(folder, "cairn.db");
const db = new BetterSqlite3(path, { readonly: true });
const roots = db.prepare("SELECT rootpage FROM sqlite_schema WHERE rootpage > 0").pluck().all() as number[];
const values = db
  .prepare("SELECT id, text FROM raw_nodes ORDER BY random() LIMIT ?")
  .raw()
  .all(Number(count))
  .flat() as string[];
db.close();
const needles = residueNeedles(values);
for (let round = 0; round < Number(rounds); round++) {
  const started = performance.now();
  const scan = scanForResidue(path, roots, needles);
  const ms = performance.now() - started;
  console.log(
    `scan ${round + 1}: ${ms.toFixed(0)} ms, ${scan.pages.toLocaleString("en")} pages, ${scan.hits.length} hits`,
  );
}
