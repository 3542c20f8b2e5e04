import type { Database } from "better-sqlite3";
import { decodePostings, extremes, type PostingArrays } from "./lexical-postings.ts";
import { type LexicalTables, lexicalFields, lexicalTables } from "./lexical-tables.ts";
import { queryTokens } from "./lexical-tokens.ts";
import { scopeTokenOf } from "./scope-context.ts";
import { statement } from "./statements.ts";
import type { TenantStorage } from "./tenants.ts";

/**
 * Whether a tenant's lexical structures agree with the text they index (empty when they do): FTS5's
 * own `integrity-check` of each table, then Cairn's index (decision 030) against FTS5's tokens —
 * every term's postings (rowid, tf, document length, scope), each block's count and bounds, the
 * dictionary's df and last rowid, and the per-scope and table-wide statistics.
 *
 * Memory stays flat in the number of terms: the expected postings come term by term from FTS5's
 * `fts5vocab` instance view (in term order, as FTS5 keeps them), merged with the dictionary read in
 * the same (byte) order; only each row's length and scope ordinal are held, in two typed arrays
 * indexed by rowid. `cairn check` runs it on every tenant; the tests run it after every kind of write.
 */
export function verifyLexicalIndex(db: Database, storage: TenantStorage): string[] {
  const problems = new Problems(maxProblems);
  for (const field of lexicalFields) verifyField({ db, tables: lexicalTables(storage, field), field, problems });
  return problems.list();
}

/** Problems reported per tenant at most: a broken index would otherwise name every term it holds. */
const maxProblems = 50;

class Problems {
  readonly #kept: string[] = [];
  #more = 0;
  constructor(readonly limit: number) {}
  add(problem: string): void {
    if (this.#kept.length < this.limit) this.#kept.push(problem);
    else this.#more++;
  }
  list(): string[] {
    return this.#more > 0 ? [...this.#kept, `… and ${this.#more} more`] : [...this.#kept];
  }
}

function tableExists(db: Database, name: string): boolean {
  return (
    statement(db, "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?").get(name) !== undefined
  );
}

/** One field's index under check: where it lives, and where its problems go. */
interface FieldCheck {
  readonly db: Database;
  readonly tables: LexicalTables;
  readonly field: string;
  readonly problems: Problems;
}

/** A scope's row in the index's statistics. */
interface ScopeRow {
  readonly ordinal: number;
  readonly docs: number;
  readonly tokens: number;
}

function verifyField(check: FieldCheck): void {
  const { db, tables, field, problems } = check;
  if (!tableExists(db, tables.fts)) return;
  if (!tableExists(db, tables.terms)) {
    const rows = statement(db, `SELECT count(*) FROM ${tables.fts}`, "pluck").get() as number;
    if (rows > 0) problems.add(`${field}: ${rows} FTS rows and no lexical index`);
    return;
  }
  try {
    // FTS5 compares its inverted index with the rows it was given (throws SQLITE_CORRUPT_VTAB if not).
    db.prepare(`INSERT INTO ${tables.fts} (${tables.fts}) VALUES ('integrity-check')`).run();
  } catch (error) {
    problems.add(`${field}: FTS5's integrity-check failed: ${(error as Error).message}`);
    return;
  }
  const scopes = new Map<string, ScopeRow>();
  for (const [scopeKey, ordinal, docs, tokens] of statement(
    db,
    `SELECT scope_key, ord, docs, tokens FROM ${tables.scopes} WHERE ord <> 0`,
    "raw",
  ).all() as [string, number, number, number][]) {
    scopes.set(scopeKey, { ordinal, docs, tokens });
  }
  const documents = readDocuments(check, scopes);
  verifyStatistics(check, scopes, documents);
  verifyTerms(check, documents);
}

interface Documents {
  /** Per rowid: the row's length in tokens (FTS5's column size), −1 for no row. */
  readonly lengths: Int32Array;
  /** Per rowid: its scope's ordinal in the index, −1 when the index has none for it. */
  readonly ordinals: Int32Array;
  /** FTS5's tokens of the tenant's scope tokens (counted in lengths, never terms). */
  readonly scopeTokens: ReadonlySet<string>;
  /** Per scope key: documents and tokens counted from the rows. */
  readonly perScope: ReadonlyMap<string, { docs: number; tokens: number }>;
  readonly rows: number;
  readonly tokens: number;
}

/** Each FTS row's length (FTS5's `_docsize`) and the scope its raw node belongs to. */
function readDocuments(check: FieldCheck, scopes: ReadonlyMap<string, ScopeRow>): Documents {
  const { db, tables, field, problems } = check;
  const maxRowid = (statement(db, `SELECT max(id) FROM ${tables.fts}_docsize`, "pluck").get() as number | null) ?? 0;
  const lengths = new Int32Array(maxRowid + 1).fill(-1);
  const ordinals = new Int32Array(maxRowid + 1).fill(-1);
  const perScope = new Map<string, { docs: number; tokens: number }>();
  let rows = 0;
  let tokens = 0;
  for (const [rowid, size, scopeKey] of statement(
    db,
    `SELECT d.id, d.sz, r.scope_key FROM ${tables.fts}_docsize d LEFT JOIN raw_nodes r ON r.rowid = d.id`,
    "raw",
  ).iterate() as IterableIterator<[number, Uint8Array, string | null]>) {
    const length = readVarints(size, 1)[0] as number;
    lengths[rowid] = length;
    rows++;
    tokens += length;
    if (scopeKey === null) {
      problems.add(`${field}: FTS row ${rowid} belongs to no raw node`);
      continue;
    }
    const counts = perScope.get(scopeKey) ?? { docs: 0, tokens: 0 };
    counts.docs++;
    counts.tokens += length;
    perScope.set(scopeKey, counts);
    const scope = scopes.get(scopeKey);
    if (scope === undefined) continue; // reported once per scope by verifyStatistics
    ordinals[rowid] = scope.ordinal;
  }
  const keys = [...perScope.keys()];
  const scopeTokens = new Set(
    queryTokens(keys.map((key) => scopeTokenOf(key))).filter((token): token is string => token !== null),
  );
  return { lengths, ordinals, scopeTokens, perScope, rows, tokens };
}

function verifyStatistics(check: FieldCheck, scopes: ReadonlyMap<string, ScopeRow>, documents: Documents): void {
  const { db, tables, field, problems } = check;
  const stored = new Map(scopes);
  for (const [scopeKey, counted] of documents.perScope) {
    const held = stored.get(scopeKey);
    stored.delete(scopeKey);
    if (!held) problems.add(`${field}: scope ${scopeKey} has ${counted.docs} FTS rows and no statistics row`);
    else if (held.docs !== counted.docs || held.tokens !== counted.tokens) {
      problems.add(
        `${field}: scope ${scopeKey} statistics ${held.docs} docs / ${held.tokens} tokens, its FTS rows ${counted.docs} / ${counted.tokens}`,
      );
    }
  }
  for (const [scopeKey, held] of stored) {
    if (held.docs !== 0) problems.add(`${field}: scope ${scopeKey} counts ${held.docs} docs and has no FTS row`);
  }
  const total = statement(db, `SELECT docs, tokens FROM ${tables.scopes} WHERE ord = 0`).get() as
    | { docs: number; tokens: number }
    | undefined;
  const fts = ftsTotals(db, tables.fts);
  if (!total || total.docs !== fts.rows || total.tokens !== fts.tokens) {
    problems.add(`${field}: statistics ${JSON.stringify(total)} ≠ FTS5's ${JSON.stringify(fts)}`);
  }
  if (fts.rows !== documents.rows || fts.tokens !== documents.tokens) {
    problems.add(
      `${field}: FTS5's averages record says ${fts.rows} rows / ${fts.tokens} tokens, its rows ${documents.rows} / ${documents.tokens}`,
    );
  }
}

interface TermRow {
  readonly id: number;
  readonly term: string;
  readonly df: number;
  readonly last_doc: number;
  readonly tail: Uint8Array;
  readonly tail_n: number;
  readonly tail_max_tf: number;
  readonly tail_min_len: number;
}

/** UTF-8 byte order: the order of FTS5's terms and of SQLite's BINARY collation alike. */
function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** The dictionary and FTS5's vocabulary merged in term order; each shared term's list compared in full. */
function verifyTerms(check: FieldCheck, documents: Documents): void {
  const { db, tables, field, problems } = check;
  const vocabulary = `cairn_verify_${tables.fts}_row`;
  const instances = `cairn_verify_${tables.fts}_instance`;
  db.exec(
    `CREATE VIRTUAL TABLE IF NOT EXISTS temp.${vocabulary} USING fts5vocab (main, ${tables.fts}, row);
     CREATE VIRTUAL TABLE IF NOT EXISTS temp.${instances} USING fts5vocab (main, ${tables.fts}, instance);`,
  );
  try {
    const ftsTerms = db.prepare(`SELECT term FROM temp.${vocabulary}`).pluck().iterate() as IterableIterator<string>;
    const dictionary = db
      .prepare(
        `SELECT id, term, df, last_doc, tail, tail_n, tail_max_tf, tail_min_len FROM ${tables.terms} ORDER BY term`,
      )
      .iterate() as IterableIterator<TermRow>;
    const termDocs = db.prepare(`SELECT doc FROM temp.${instances} WHERE term = ?`).pluck();
    const blocks = db.prepare(
      `SELECT last_doc, n, max_tf, min_len, postings FROM ${tables.blocks} WHERE term_id = ? ORDER BY last_doc`,
    );
    let fromFts = ftsTerms.next();
    let fromIndex = dictionary.next();
    while (!fromFts.done || !fromIndex.done) {
      if (!fromFts.done && documents.scopeTokens.has(fromFts.value)) {
        fromFts = ftsTerms.next();
        continue;
      }
      const order = fromFts.done
        ? 1
        : fromIndex.done
          ? -1
          : compareBytes(fromFts.value, (fromIndex.value as TermRow).term);
      if (order < 0) {
        problems.add(`${field} "${fromFts.value}": in FTS5's rows, missing from the dictionary`);
        fromFts = ftsTerms.next();
        continue;
      }
      const row = fromIndex.value as TermRow;
      if (order > 0) {
        problems.add(`${field} "${row.term}": in the dictionary, in no FTS row`);
        fromIndex = dictionary.next();
        continue;
      }
      const expected = expectedPostings(termDocs.all(row.term) as number[], documents);
      const stored = storedPostings(row, blocks.all(row.id) as BlockRow[], field, problems);
      comparePostings(field, row, expected, stored, problems);
      fromFts = ftsTerms.next();
      fromIndex = dictionary.next();
    }
  } finally {
    db.exec(`DROP TABLE IF EXISTS temp.${vocabulary}; DROP TABLE IF EXISTS temp.${instances};`);
  }
}

/** One posting per row holding the term: its instances counted (FTS5 lists them by row, then offset). */
function expectedPostings(instanceDocs: readonly number[], documents: Documents): PostingArrays {
  const postings: PostingArrays = { docs: [], tfs: [], lengths: [], scopes: [] };
  for (const doc of instanceDocs) {
    const last = postings.docs.length - 1;
    if (last >= 0 && postings.docs[last] === doc) {
      (postings.tfs as number[])[last] = (postings.tfs[last] as number) + 1;
      continue;
    }
    postings.docs.push(doc);
    postings.tfs.push(1);
    postings.lengths.push(documents.lengths[doc] ?? -1);
    postings.scopes.push(documents.ordinals[doc] ?? -1);
  }
  return postings;
}

interface BlockRow {
  readonly last_doc: number;
  readonly n: number;
  readonly max_tf: number;
  readonly min_len: number;
  readonly postings: Uint8Array;
}

/** A term's list as stored (sealed blocks, then its tail), each block's own record checked on the way. */
function storedPostings(row: TermRow, blocks: readonly BlockRow[], field: string, problems: Problems): PostingArrays {
  const all: PostingArrays = { docs: [], tfs: [], lengths: [], scopes: [] };
  const append = (decoded: PostingArrays) => {
    for (let index = 0; index < decoded.docs.length; index++) {
      all.docs.push(decoded.docs[index] as number);
      all.tfs.push(decoded.tfs[index] as number);
      all.lengths.push(decoded.lengths[index] as number);
      all.scopes.push(decoded.scopes[index] as number);
    }
  };
  const checkRecord = (
    what: string,
    decoded: PostingArrays,
    record: { n: number; maxTf: number; minLength: number; lastDoc?: number },
  ) => {
    const { maxTf, minLength } = extremes(
      decoded.docs.map((doc, index) => ({
        doc,
        tf: decoded.tfs[index] as number,
        length: decoded.lengths[index] as number,
        scope: decoded.scopes[index] as number,
      })),
    );
    const count = decoded.docs.length;
    if (count !== record.n || (count > 0 && (maxTf !== record.maxTf || minLength !== record.minLength))) {
      problems.add(`${field} "${row.term}": ${what}'s count or bounds differ from its postings`);
    }
    if (record.lastDoc !== undefined && decoded.docs.at(-1) !== record.lastDoc) {
      problems.add(
        `${field} "${row.term}": ${what} is keyed by rowid ${record.lastDoc}, its last posting is ${decoded.docs.at(-1)}`,
      );
    }
  };
  for (const block of blocks) {
    const decoded = decodeOrReport(block.postings, field, row.term, problems);
    checkRecord(`block ${block.last_doc}`, decoded, {
      n: block.n,
      maxTf: block.max_tf,
      minLength: block.min_len,
      lastDoc: block.last_doc,
    });
    append(decoded);
  }
  const tail = decodeOrReport(row.tail, field, row.term, problems);
  checkRecord("the tail", tail, { n: row.tail_n, maxTf: row.tail_max_tf, minLength: row.tail_min_len });
  append(tail);
  return all;
}

function decodeOrReport(bytes: Uint8Array, field: string, term: string, problems: Problems): PostingArrays {
  try {
    return decodePostings(bytes);
  } catch (error) {
    problems.add(`${field} "${term}": postings do not decode (${(error as Error).message})`);
    return { docs: [], tfs: [], lengths: [], scopes: [] };
  }
}

function comparePostings(
  field: string,
  row: TermRow,
  expected: PostingArrays,
  stored: PostingArrays,
  problems: Problems,
): void {
  if (row.df !== stored.docs.length)
    problems.add(`${field} "${row.term}": df ${row.df} for ${stored.docs.length} postings`);
  if (stored.docs.length > 0 && row.last_doc !== stored.docs.at(-1)) {
    problems.add(`${field} "${row.term}": last_doc ${row.last_doc}, its last posting ${stored.docs.at(-1)}`);
  }
  const count = Math.max(expected.docs.length, stored.docs.length);
  for (let index = 0; index < count; index++) {
    const want = postingAt(expected, index);
    const got = postingAt(stored, index);
    if (want !== got) {
      problems.add(
        `${field} "${row.term}": posting ${index} is ${got ?? "missing"}, FTS5's rows say ${want ?? "none"}`,
      );
      return;
    }
  }
}

/** "rowid tf length scope" of one posting, or undefined past the end. */
function postingAt(postings: PostingArrays, index: number): string | undefined {
  if (index >= postings.docs.length) return undefined;
  return `${postings.docs[index]} tf ${postings.tfs[index]} length ${postings.lengths[index]} scope ${postings.scopes[index]}`;
}

/** SQLite's varints (FTS5 writes its records with them): big-endian 7-bit groups, a ninth byte of 8 bits. */
export function readVarints(bytes: Uint8Array, count: number): number[] {
  const values: number[] = [];
  let offset = 0;
  for (let read = 0; read < count; read++) {
    let value = 0;
    let done = false;
    for (let index = 0; index < 8 && !done; index++) {
      const byte = bytes[offset++] ?? 0;
      value = value * 128 + (byte & 0x7f);
      done = (byte & 0x80) === 0;
    }
    if (!done) value = value * 256 + (bytes[offset++] ?? 0);
    values.push(value);
  }
  return values;
}

/** FTS5's own row count and total length: the varints of its averages record (`<table>_data`, id 1). */
export function ftsTotals(db: Database, fts: string): { rows: number; tokens: number } {
  const block = statement(db, `SELECT block FROM ${fts}_data WHERE id = 1`, "pluck").get() as Uint8Array | undefined;
  if (!block) return { rows: 0, tokens: 0 };
  const [rows, tokens] = readVarints(block, 2) as [number, number];
  return { rows, tokens };
}
