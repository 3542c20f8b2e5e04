import type { Database } from "better-sqlite3";
import type { LexicalField } from "../store.ts";

/** What the index needs of a tenant's storage (`tenants.ts`, which creates these tables with its FTS tables). */
interface TenantTables {
  readonly token: string;
  readonly textTable: string;
  readonly imageTextTable: string;
}

/**
 * Cairn's own inverted index beside each tenant FTS5 table (decision 030), so the BM25 pass can skip
 * whole blocks of a common word's postings instead of having FTS5 rank every document that holds it.
 * It indexes the same rows with FTS5's own tokens (`lexical-tokens.ts`), so its statistics and
 * scores are FTS5's; FTS5 stays, as the phrase fallback and the A/B path.
 *
 * Per tenant and field, three tables:
 * - terms: the dictionary. A term's postings are its sealed blocks plus its tail, the newest postings
 *   (fewer than `blockSize` after a write), kept in the term row so an ingest appends with one
 *   upsert per term instead of reading and rewriting a block. `last_doc` is the list's last rowid.
 * - blocks: sealed blocks of ≤ `blockSize` postings keyed by (term, last rowid), each with its largest
 *   tf and smallest document length: an upper bound on any of its postings' BM25 terms.
 * - scopes: per scope of the tenant, its document and token counts (row 0: the whole table, FTS5's
 *   N and total length), and the small ordinal its postings carry so a walk keeps one scope's rows.
 *
 * The scope token every FTS row starts with is counted in lengths but not indexed as a term: its
 * document count is the scope's `docs`.
 */
export interface LexicalTables {
  readonly terms: string;
  readonly blocks: string;
  readonly scopes: string;
  /** The FTS5 table indexing the same rows. */
  readonly fts: string;
}

export function lexicalTables(storage: TenantTables, field: LexicalField): LexicalTables {
  const prefix = `lex_${field === "text" ? "text" : "image_text"}_${storage.token}`;
  return {
    terms: `${prefix}_terms`,
    blocks: `${prefix}_blocks`,
    scopes: `${prefix}_scopes`,
    fts: field === "text" ? storage.textTable : storage.imageTextTable,
  };
}

export const lexicalFields: readonly LexicalField[] = ["text", "imageText"];

/** The tenant's index tables, created if missing; inside the write transaction that needs them. */
export function ensureLexicalTables(db: Database, storage: TenantTables): void {
  for (const field of lexicalFields) {
    const tables = lexicalTables(storage, field);
    db.exec(`
      CREATE TABLE IF NOT EXISTS ${tables.terms} (
        id INTEGER PRIMARY KEY,
        term TEXT NOT NULL UNIQUE,
        df INTEGER NOT NULL,
        last_doc INTEGER NOT NULL,
        tail BLOB NOT NULL,
        tail_n INTEGER NOT NULL,
        tail_max_tf INTEGER NOT NULL,
        tail_min_len INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS ${tables.blocks} (
        term_id INTEGER NOT NULL,
        last_doc INTEGER NOT NULL,
        n INTEGER NOT NULL,
        max_tf INTEGER NOT NULL,
        min_len INTEGER NOT NULL,
        postings BLOB NOT NULL,
        PRIMARY KEY (term_id, last_doc)
      ) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS ${tables.scopes} (
        ord INTEGER PRIMARY KEY,
        scope_key TEXT NOT NULL UNIQUE,
        docs INTEGER NOT NULL,
        tokens INTEGER NOT NULL
      );
      INSERT OR IGNORE INTO ${tables.scopes} (ord, scope_key, docs, tokens) VALUES (0, '', 0, 0);
    `);
  }
}
