import type { Database } from "better-sqlite3";
import type { LexicalField } from "../store.ts";
import {
  blockSize,
  decodePostings,
  encodeChunk,
  extremes,
  type Posting,
  type PostingArrays,
  toPostings,
} from "./lexical-postings.ts";
import { ensureLexicalTables, type LexicalTables, lexicalFields, lexicalTables } from "./lexical-tables.ts";
import { queryTokens, tokenizeTexts } from "./lexical-tokens.ts";
import { scopeTokenOf } from "./scope-context.ts";
import { statement } from "./statements.ts";
import type { TenantStorage } from "./tenants.ts";

export { type LexicalTables, lexicalFields, lexicalTables } from "./lexical-tables.ts";

/** A row of an FTS table as the index takes it: the body FTS5 was given, and its raw node's scope. */
export interface LexicalDocument {
  readonly rowid: number;
  readonly scopeKey: string;
  readonly body: string;
}

/** Rows a transaction writes, indexed together when it is about to commit (one upsert per term for the lot). */
export class LexicalWrites {
  readonly #documents = new Map<LexicalField, LexicalDocument[]>();

  add(field: LexicalField, document: LexicalDocument): void {
    const list = this.#documents.get(field) ?? [];
    list.push(document);
    this.#documents.set(field, list);
  }

  flush(db: Database, storage: TenantStorage): void {
    for (const [field, documents] of this.#documents) indexDocuments(db, lexicalTables(storage, field), documents);
    this.#documents.clear();
  }
}

/** Per document: its postings' parts, the scope token's own token left out. */
function tokenize(db: Database, tables: LexicalTables, documents: readonly LexicalDocument[]) {
  const tokens = tokenizeTexts(documents.map((document) => document.body));
  const scopes = new Map<string, { token: string | null; ordinal: number }>();
  return documents.map((document, index) => {
    let scope = scopes.get(document.scopeKey);
    if (!scope) {
      const token = queryTokens([scopeTokenOf(document.scopeKey)])[0] ?? null;
      scope = { token, ordinal: scopeOrdinal(db, tables, document.scopeKey) };
      scopes.set(document.scopeKey, scope);
    }
    const { frequencies, length } = tokens[index] as { frequencies: Map<string, number>; length: number };
    if (scope.token !== null) frequencies.delete(scope.token);
    return { document, frequencies, length, scope: scope.ordinal };
  });
}

function scopeOrdinal(db: Database, tables: LexicalTables, scopeKey: string): number {
  const found = statement(db, `SELECT ord FROM ${tables.scopes} WHERE scope_key = ?`, "pluck").get(scopeKey) as
    | number
    | undefined;
  if (found !== undefined) return found;
  return Number(
    statement(db, `INSERT INTO ${tables.scopes} (scope_key, docs, tokens) VALUES (?, 0, 0)`).run(scopeKey)
      .lastInsertRowid,
  );
}

/** Adds (or, with `sign` −1, takes away) the documents and their tokens to their scopes' counts and the table's. */
function addToStats(
  db: Database,
  tables: LexicalTables,
  entries: readonly { scope: number; length: number }[],
  sign: 1 | -1,
): void {
  const perScope = new Map<number, { docs: number; tokens: number }>([[0, { docs: 0, tokens: 0 }]]);
  for (const entry of entries) {
    for (const ordinal of [0, entry.scope]) {
      const counts = perScope.get(ordinal) ?? { docs: 0, tokens: 0 };
      counts.docs += sign;
      counts.tokens += sign * entry.length;
      perScope.set(ordinal, counts);
    }
  }
  const update = statement(db, `UPDATE ${tables.scopes} SET docs = docs + ?, tokens = tokens + ? WHERE ord = ?`);
  for (const [ordinal, counts] of perScope) update.run(counts.docs, counts.tokens, ordinal);
  if (sign < 0) {
    const drop = statement(db, `DELETE FROM ${tables.scopes} WHERE ord = ? AND ord <> 0 AND docs = 0`);
    for (const ordinal of perScope.keys()) drop.run(ordinal);
  }
}

/** Postings grouped by term, each list ascending by rowid. */
function byTerm(entries: ReturnType<typeof tokenize>): Map<string, Posting[]> {
  const terms = new Map<string, Posting[]>();
  const sorted = [...entries].sort((a, b) => a.document.rowid - b.document.rowid);
  for (const entry of sorted) {
    for (const [term, tf] of entry.frequencies) {
      const list = terms.get(term) ?? [];
      list.push({ doc: entry.document.rowid, tf, length: entry.length, scope: entry.scope });
      terms.set(term, list);
    }
  }
  return terms;
}

/** New FTS rows into the index: appended to each term's tail, sealed into blocks once it is full. */
export function indexDocuments(db: Database, tables: LexicalTables, documents: readonly LexicalDocument[]): void {
  if (documents.length === 0) return;
  const entries = tokenize(db, tables, documents);
  addToStats(db, tables, entries, 1);
  const append = statement(
    db,
    `INSERT INTO ${tables.terms} (term, df, last_doc, tail, tail_n, tail_max_tf, tail_min_len)
       VALUES (@term, @n, @last, @chunk, @n, @maxTf, @minLength)
     ON CONFLICT (term) DO UPDATE SET
       df = df + excluded.df, last_doc = excluded.last_doc, tail = CAST(tail || excluded.tail AS BLOB), tail_n = tail_n + excluded.tail_n,
       tail_max_tf = CASE WHEN tail_n = 0 THEN excluded.tail_max_tf ELSE max(tail_max_tf, excluded.tail_max_tf) END,
       tail_min_len = CASE WHEN tail_n = 0 THEN excluded.tail_min_len ELSE min(tail_min_len, excluded.tail_min_len) END
     WHERE last_doc < @first
     RETURNING id, tail_n`,
  );
  for (const [term, postings] of byTerm(entries)) {
    const { maxTf, minLength } = extremes(postings);
    const appended = append.get({
      term,
      n: postings.length,
      last: (postings.at(-1) as Posting).doc,
      first: (postings[0] as Posting).doc,
      chunk: encodeChunk(postings),
      maxTf,
      minLength,
    }) as { id: number; tail_n: number } | undefined;
    // A rowid at or below the list's last (a row written again in place) takes the general path.
    if (!appended) rewriteTerm(db, tables, term, postings, new Set());
    else if (appended.tail_n >= blockSize) sealTail(db, tables, appended.id);
  }
}

/** FTS rows leaving the index (a forget, or a row about to be written again): their postings go, and any term left with none. */
export function unindexDocuments(db: Database, tables: LexicalTables, documents: readonly LexicalDocument[]): void {
  if (documents.length === 0) return;
  const entries = tokenize(db, tables, documents);
  addToStats(db, tables, entries, -1);
  for (const [term, postings] of byTerm(entries)) {
    rewriteTerm(db, tables, term, [], new Set(postings.map((posting) => posting.doc)));
  }
}

/** The FTS rows of these rowids as the index took them (read before FTS5 deletes them). */
export function ftsDocuments(
  db: Database,
  tables: LexicalTables,
  scopeKey: string,
  rowids: readonly number[],
): LexicalDocument[] {
  const rows = statement(
    db,
    `SELECT rowid, body FROM ${tables.fts} WHERE rowid IN (SELECT value FROM json_each(?))`,
    "raw",
  ).all(JSON.stringify(rowids)) as [number, string][];
  return rows.map(([rowid, body]) => ({ rowid, scopeKey, body }));
}

interface TermRow {
  id: number;
  df: number;
  tail: Uint8Array;
}

function readTail(db: Database, tables: LexicalTables, id: number): PostingArrays {
  const tail = statement(db, `SELECT tail FROM ${tables.terms} WHERE id = ?`, "pluck").get(id) as Uint8Array;
  return decodePostings(tail);
}

function writeBlocks(db: Database, tables: LexicalTables, termId: number, postings: readonly Posting[]): void {
  const insert = statement(
    db,
    `INSERT INTO ${tables.blocks} (term_id, last_doc, n, max_tf, min_len, postings) VALUES (?, ?, ?, ?, ?, ?)`,
  );
  for (let start = 0; start < postings.length; start += blockSize) {
    const block = postings.slice(start, start + blockSize);
    const { maxTf, minLength } = extremes(block);
    insert.run(termId, (block.at(-1) as Posting).doc, block.length, maxTf, minLength, encodeChunk(block));
  }
}

function setTail(db: Database, tables: LexicalTables, termId: number, postings: readonly Posting[]): void {
  const { maxTf, minLength } = extremes(postings);
  statement(db, `UPDATE ${tables.terms} SET tail = ?, tail_n = ?, tail_max_tf = ?, tail_min_len = ? WHERE id = ?`).run(
    postings.length > 0 ? encodeChunk(postings) : new Uint8Array(0),
    postings.length,
    maxTf,
    minLength,
    termId,
  );
}

/** A full tail becomes sealed blocks; the term row keeps an empty tail. */
function sealTail(db: Database, tables: LexicalTables, termId: number): void {
  writeBlocks(db, tables, termId, toPostings(readTail(db, tables, termId)));
  setTail(db, tables, termId, []);
}

/**
 * The general change of one term's list: postings added anywhere and rowids removed. Each change
 * lands in the block that owns its rowid (the first whose last rowid is not below it; past the
 * last sealed block, the tail); only those blocks are rewritten, each within its own range, so
 * blocks never overlap. Secure-delete zeroes the rows replaced. A term left with no posting goes.
 */
function rewriteTerm(
  db: Database,
  tables: LexicalTables,
  term: string,
  adds: readonly Posting[],
  removes: ReadonlySet<number>,
): void {
  let row = statement(db, `SELECT id, df, tail FROM ${tables.terms} WHERE term = ?`).get(term) as TermRow | undefined;
  if (!row) {
    if (adds.length === 0) return;
    statement(
      db,
      `INSERT INTO ${tables.terms} (term, df, last_doc, tail, tail_n, tail_max_tf, tail_min_len) VALUES (?, 0, 0, x'', 0, 0, 0)`,
    ).run(term);
    row = statement(db, `SELECT id, df, tail FROM ${tables.terms} WHERE term = ?`).get(term) as TermRow;
  }
  const termId = row.id;
  const owner = statement(
    db,
    `SELECT last_doc FROM ${tables.blocks} WHERE term_id = ? AND last_doc >= ? ORDER BY last_doc LIMIT 1`,
    "pluck",
  );
  const changes = new Map<number | null, { adds: Posting[]; removes: Set<number> }>();
  const changeOf = (doc: number) => {
    const key = (owner.get(termId, doc) as number | undefined) ?? null;
    let change = changes.get(key);
    if (!change) {
      change = { adds: [], removes: new Set() };
      changes.set(key, change);
    }
    return change;
  };
  for (const posting of adds) changeOf(posting.doc).adds.push(posting);
  for (const doc of removes) changeOf(doc).removes.add(doc);
  let df = row.df;
  const apply = (current: Posting[], change: { adds: Posting[]; removes: Set<number> }): Posting[] => {
    const replaced = new Set(change.adds.map((posting) => posting.doc));
    const kept = current.filter((posting) => !change.removes.has(posting.doc) && !replaced.has(posting.doc));
    df += kept.length + change.adds.length - current.length;
    return [...kept, ...change.adds].sort((a, b) => a.doc - b.doc);
  };
  for (const [key, change] of changes) {
    if (key === null) continue;
    const bytes = statement(
      db,
      `SELECT postings FROM ${tables.blocks} WHERE term_id = ? AND last_doc = ?`,
      "pluck",
    ).get(termId, key) as Uint8Array;
    const next = apply(toPostings(decodePostings(bytes)), change);
    statement(db, `DELETE FROM ${tables.blocks} WHERE term_id = ? AND last_doc = ?`).run(termId, key);
    writeBlocks(db, tables, termId, next);
  }
  const tailChange = changes.get(null);
  let tail = toPostings(decodePostings(row.tail));
  if (tailChange) tail = apply(tail, tailChange);
  if (df === 0) {
    statement(db, `DELETE FROM ${tables.terms} WHERE id = ?`).run(termId);
    return;
  }
  if (tail.length >= blockSize) {
    writeBlocks(db, tables, termId, tail);
    tail = [];
  }
  setTail(db, tables, termId, tail);
  const lastSealed = statement(db, `SELECT max(last_doc) FROM ${tables.blocks} WHERE term_id = ?`, "pluck").get(
    termId,
  ) as number | null;
  statement(db, `UPDATE ${tables.terms} SET df = ?, last_doc = ? WHERE id = ?`).run(
    df,
    tail.length > 0 ? (tail.at(-1) as Posting).doc : (lastSealed ?? 0),
    termId,
  );
}

/**
 * The tenant's index built again from its FTS rows (a migration, or a repair): emptied, then fed in
 * pages of ascending rowid, so memory stays flat on a large store and every page appends.
 */
export function rebuildLexicalIndex(db: Database, storage: TenantStorage): void {
  ensureLexicalTables(db, storage);
  for (const field of lexicalFields) {
    const tables = lexicalTables(storage, field);
    db.exec(`DELETE FROM ${tables.blocks}; DELETE FROM ${tables.terms}; DELETE FROM ${tables.scopes} WHERE ord <> 0;
             UPDATE ${tables.scopes} SET docs = 0, tokens = 0;`);
    const page = db.prepare(
      `SELECT f.rowid, f.body, r.scope_key FROM ${tables.fts} f JOIN raw_nodes r ON r.rowid = f.rowid
       WHERE f.rowid > ? ORDER BY f.rowid LIMIT 2000`,
    );
    let after = 0;
    for (;;) {
      const rows = page.raw().all(after) as [number, string, string][];
      if (rows.length === 0) break;
      indexDocuments(
        db,
        tables,
        rows.map(([rowid, body, scopeKey]) => ({ rowid, body, scopeKey })),
      );
      after = (rows.at(-1) as [number, string, string])[0];
    }
  }
}
