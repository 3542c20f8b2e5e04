/**
 * What erasing forgotten words from FTS5 costs (decision 007): a forget of 10 rows from a table of
 * 30-word rows, under each way of getting the words out of the segment b-trees. Five forgets per
 * variant; the median is reported.
 *
 *   npx tsx bench/forget-cost.ts                 # 10,000 and 100,000 rows
 *   npx tsx bench/forget-cost.ts --sizes 10000
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";

const { values } = parseArgs({ options: { sizes: { type: "string", default: "10000,100000" } } });
const sizes = values.sizes.split(",").map(Number);
/** Forgets timed per variant; the median of five is stable on a shared machine. */
const forgets = 5;
const rowsPerForget = 10;
const wordsPerRow = 30;

interface Variant {
  readonly name: string;
  /** FTS5's own secure-delete option on the table. */
  readonly ftsSecureDelete: boolean;
  /** SQLite's `secure_delete` pragma on the connection. */
  readonly pragmaSecureDelete: boolean;
  /** What runs after the deletes, in the same transaction. */
  readonly after: "optimize" | "merge" | null;
}

const variants: readonly Variant[] = [
  { name: "tombstone only (before decision 007)", ftsSecureDelete: false, pragmaSecureDelete: false, after: null },
  { name: "tombstone + secure_delete pragma", ftsSecureDelete: false, pragmaSecureDelete: true, after: null },
  { name: "FTS5 secure-delete (chosen)", ftsSecureDelete: true, pragmaSecureDelete: false, after: null },
  {
    name: "FTS5 secure-delete + pragma (as the store runs)",
    ftsSecureDelete: true,
    pragmaSecureDelete: true,
    after: null,
  },
  { name: "tombstone + optimize", ftsSecureDelete: false, pragmaSecureDelete: true, after: "optimize" },
  { name: "tombstone + merge (does not erase)", ftsSecureDelete: false, pragmaSecureDelete: true, after: "merge" },
];

/** A seeded generator, so every variant sees the same rows and forgets the same ids. */
function lcg(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

function build(path: string, rows: number, variant: Variant, random: () => number): Database.Database {
  const vocabulary = Array.from({ length: 20_000 }, (_, index) => `w${index.toString(36)}`);
  // Squaring skews word choice toward the front, roughly like natural text's frequency curve.
  const text = () =>
    Array.from({ length: wordsPerRow }, () => vocabulary[Math.floor(random() ** 2 * vocabulary.length)]).join(" ");
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma(`secure_delete = ${variant.pragmaSecureDelete ? "ON" : "OFF"}`);
  db.exec("CREATE VIRTUAL TABLE f USING fts5 (body, tokenize = 'porter unicode61 remove_diacritics 2')");
  if (variant.ftsSecureDelete) db.exec("INSERT INTO f (f, rank) VALUES ('secure-delete', 1)");
  const insert = db.prepare("INSERT INTO f (rowid, body) VALUES (?, ?)");
  db.transaction(() => {
    for (let rowid = 1; rowid <= rows; rowid++) insert.run(rowid, text());
  })();
  db.exec("INSERT INTO f (f) VALUES ('optimize')");
  // A few writes after the bulk load, as a live store has, so not everything sits in one segment.
  db.transaction(() => {
    for (let rowid = rows + 1; rowid <= rows + 200; rowid++) insert.run(rowid, text());
  })();
  return db;
}

for (const rows of sizes) {
  for (const variant of variants) {
    const dir = mkdtempSync(join(tmpdir(), "cairn-forget-cost-"));
    const random = lcg(1);
    const db = build(join(dir, "fts.db"), rows, variant, random);
    const remove = db.prepare("DELETE FROM f WHERE rowid = ?");
    const times: number[] = [];
    for (let run = 0; run < forgets; run++) {
      const ids = Array.from({ length: rowsPerForget }, () => 1 + Math.floor(random() * rows));
      const started = performance.now();
      db.transaction(() => {
        for (const id of ids) remove.run(id);
        if (variant.after === "optimize") db.exec("INSERT INTO f (f) VALUES ('optimize')");
        if (variant.after === "merge") db.exec("INSERT INTO f (f, rank) VALUES ('merge', -16)");
      })();
      times.push(performance.now() - started);
    }
    db.close();
    rmSync(dir, { recursive: true, force: true });
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)] ?? Number.NaN;
    console.log(
      `${rows.toLocaleString("en")} rows, ${variant.name}: ${median.toFixed(1)} ms per forget of ${rowsPerForget} rows`,
    );
  }
}
