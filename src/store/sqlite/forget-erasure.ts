import { statSync } from "node:fs";
import type { Database } from "better-sqlite3";
import type { ForgetErasure } from "../records.ts";
import { type ResidueNeedles, residueNeedles, scanForResidue } from "./residue-scan.ts";
import type { ScopeContext } from "./scope-context.ts";
import { imageSlots, plainTableOf, type SpaceRow } from "./vector-rows.ts";

/**
 * The last step of a forget on SQLite (decision 038): after the commit, make sure no byte of what
 * was forgotten is left in `cairn.db`. A scan of the file (`residue-scan.ts`) looks for the
 * forgotten values where SQLite keeps bytes no live row owns; only when it finds one does the store
 * `VACUUM`, which writes every live row into fresh pages (rowids kept: every table has an INTEGER
 * PRIMARY KEY or an index, `test/store/sqlite-erasure.test.ts`). The forget's transaction marks the
 * erasure pending; a process killed before it is settled leaves the mark, and the next open, which
 * no longer knows the forgotten values, vacuums.
 */

/** Past this many bytes of forgotten values (a large scope) the store vacuums without scanning. */
const scanLimitBytes = 16 * 1024 * 1024;

/** Tries at a moment when the write lock is held and the WAL is empty (another writer can slip in between). */
const settleAttempts = 5;

/**
 * Every value a forget removes that could be found again in the file: raw-node ids, texts, sources,
 * metadata, image derived texts, session ids, keys and content hashes, and the stored vectors. Read
 * inside the forget's transaction, before the rows go; `null` when they are too many to scan for (the
 * caller vacuums). An image another raw node of the tenant still shows is not forgotten: its hash and
 * its vector stay live keys (`blobs`, `blob_vectors`), so they are kept aside by hash, and the caller
 * adds those of the images the tenant no longer holds once the forget knows them (`forgottenNeedles`).
 */
export function forgottenValues(
  context: ScopeContext,
  nodeRowids: readonly number[],
  sessionRowids: readonly number[],
  spaces: readonly SpaceRow[],
): ForgottenValues | null {
  const { db } = context;
  const nodes = JSON.stringify(nodeRowids);
  const values: (string | Buffer)[] = [];
  const byImage = new Map<string, Buffer[]>();
  let bytes = 0;
  const add = (row: readonly unknown[]) => {
    for (const value of row) {
      if (typeof value === "string" || Buffer.isBuffer(value)) {
        values.push(value);
        bytes += value.length;
      }
      // The term indexes (FTS5's and Cairn's lexical one) keep words folded to lower case.
      if (typeof value === "string" && value.toLowerCase() !== value) values.push(value.toLowerCase());
    }
  };
  const rows = (sql: string, ...params: unknown[]) =>
    db
      .prepare(sql)
      .raw()
      .all(...params) as unknown[][];
  for (const row of rows(
    "SELECT id, text, source, uri, metadata FROM raw_nodes WHERE rowid IN (SELECT value FROM json_each(?))",
    nodes,
  )) {
    add(row);
  }
  const images = rows(
    "SELECT raw_node_rowid, ordinal, blob_hash, caption, derived_text FROM raw_node_images WHERE raw_node_rowid IN (SELECT value FROM json_each(?))",
    nodes,
  );
  for (const row of images) add(row.slice(3));
  for (const row of rows(
    "SELECT id, session_key, content_hash FROM sessions WHERE rowid IN (SELECT value FROM json_each(?))",
    JSON.stringify(sessionRowids),
  )) {
    add(row);
  }
  const imageOf = new Map(
    images.map(([rowid, ordinal, hash]) => [
      (rowid as number) * imageSlots + (ordinal as number),
      hash as string | null,
    ]),
  );
  for (const space of spaces) {
    if (bytes > scanLimitBytes) break;
    const rowids = space.kind === "text" ? nodeRowids : [...imageOf.keys()];
    for (const [rowid, embedding] of rows(
      `SELECT rowid, embedding FROM ${plainTableOf(space.table_name)} WHERE rowid IN (SELECT value FROM json_each(?))`,
      JSON.stringify(rowids),
    )) {
      const hash = space.kind === "image" ? imageOf.get(rowid as number) : null;
      if (!hash) add([embedding]);
      else byImage.set(hash, [...(byImage.get(hash) ?? []), embedding as Buffer]);
      bytes += (embedding as Buffer).length;
    }
  }
  return bytes > scanLimitBytes ? null : { values, byImage };
}

/** Values read before a forget's deletes; those of an image become needles only if the image goes. */
export interface ForgottenValues {
  readonly values: readonly (string | Buffer)[];
  /** Image vectors by the image's hash. */
  readonly byImage: ReadonlyMap<string, readonly Buffer[]>;
}

/** The needles of a forget: its values, and the hashes and vectors of the images its tenant no longer holds. */
export function forgottenNeedles(
  forgotten: ForgottenValues | null,
  deletedBlobs: readonly string[],
): ResidueNeedles | null {
  if (forgotten === null) return null;
  const images = deletedBlobs.flatMap((hash) => [hash, ...(forgotten.byImage.get(hash) ?? [])]);
  return residueNeedles([...forgotten.values, ...images]);
}

/** Marks the erasure pending, inside the forget's transaction; true when it already was (an earlier forget's). */
export function markErasurePending(db: Database, now: number): boolean {
  const already = erasurePending(db);
  if (!already) db.prepare("INSERT INTO erasure_pending (id, since_ms) VALUES (1, ?)").run(now);
  return already;
}

export function erasurePending(db: Database): boolean {
  return db.prepare("SELECT 1 FROM erasure_pending").get() !== undefined;
}

/**
 * Settles the pending erasure once the forget has committed: checkpoints the WAL into the file, takes
 * the write lock with the WAL empty (so the file is the database and nothing can change it), scans
 * for the forgotten values and vacuums when one is found or when they are unknown (`null`). A reader
 * that holds an older snapshot past the busy timeout keeps the WAL from being emptied: then the
 * erasure stays pending, for the next forget or open, and the outcome says so.
 */
export function settleErasure(db: Database, databasePath: string, needles: ResidueNeedles | null): ForgetErasure {
  const started = performance.now();
  const done = (outcome: ForgetErasure["outcome"], pagesScanned: number): ForgetErasure => ({
    outcome,
    pagesScanned,
    ms: Math.round(performance.now() - started),
  });
  let pagesScanned = 0;
  for (let attempt = 0; attempt < settleAttempts; attempt++) {
    if (!checkpointed(db)) return done("pending", pagesScanned);
    if (needles === null) return vacuum(db) ? done("vacuumed", pagesScanned) : done("pending", pagesScanned);
    db.exec("BEGIN IMMEDIATE");
    let clean = false;
    try {
      if (walBytes(databasePath) > 0) continue;
      const roots = db.prepare("SELECT rootpage FROM sqlite_schema WHERE rootpage > 0").pluck().all() as number[];
      const scan = scanForResidue(databasePath, roots, needles);
      pagesScanned += scan.pages;
      if (scan.hits.length === 0) {
        db.prepare("DELETE FROM erasure_pending").run();
        db.exec("COMMIT");
        clean = true;
      }
    } finally {
      if (db.inTransaction) db.exec("ROLLBACK");
    }
    if (clean) {
      checkpointed(db);
      return done("clean", pagesScanned);
    }
    return vacuum(db) ? done("vacuumed", pagesScanned) : done("pending", pagesScanned);
  }
  return done("pending", pagesScanned);
}

/**
 * Rewrites the database into fresh pages, clears the mark and moves the result into the file; false
 * when a reader kept the WAL (the mark stays, so the next open vacuums again).
 */
export function vacuum(db: Database): boolean {
  db.exec("VACUUM");
  if (!checkpointed(db)) return false;
  db.prepare("DELETE FROM erasure_pending").run();
  return checkpointed(db);
}

/** Copies the WAL into the database and truncates it; false when a reader held it past the busy timeout. */
function checkpointed(db: Database): boolean {
  const [result] = db.pragma("wal_checkpoint(TRUNCATE)") as { busy: number }[];
  return result?.busy === 0;
}

function walBytes(databasePath: string): number {
  try {
    return statSync(`${databasePath}-wal`).size;
  } catch {
    return 0;
  }
}
