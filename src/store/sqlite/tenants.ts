import { createHash } from "node:crypto";
import type { Database } from "better-sqlite3";
import { ensureLexicalTables } from "./lexical-tables.ts";
import { statement } from "./statements.ts";

/**
 * What a tenant owns apart from the others: its own FTS5 tables (and the lexical index beside them,
 * `lexical-tables.ts`) and its own blob files. FTS5's BM25
 * counts documents and term frequencies over its whole table, and content-addressed blobs shared
 * between tenants make a write or a forget cost less when another tenant holds the same image;
 * both would let one tenant learn about another's words and images (issue 18). Scopes of one
 * tenant share these (their rows are told apart by scope key), so statistics within a tenant span
 * its users; the tenant is the wall.
 *
 * Names derive from the tenant alone (a token: `t` + 24 hex digits of SHA-256), so a write can put
 * its blob files in place before its transaction and create the tenant's tables inside it: a
 * write that fails leaves no trace. Tables are kept after a tenant's last forget (an empty FTS5
 * table holds nothing), which spares a drop racing a concurrent writer.
 */
export interface TenantStorage {
  /** Names the tenant's tables, blob rows and blob-file folder. */
  readonly token: string;
  /** FTS5 table over raw-node text. */
  readonly textTable: string;
  /** FTS5 table over image-derived text (captions, OCR). */
  readonly imageTextTable: string;
}

/** The tenant part of a scope key (`tenant/user/agent`). */
export function tenantOfKey(key: string): string {
  return key.slice(0, key.indexOf("/"));
}

/** Scope keys of one tenant sort within [`tenant/`, `tenant0`): `0` follows `/`, and ids hold no character between. */
export function tenantKeyRange(tenant: string): readonly [string, string] {
  return [`${tenant}/`, `${tenant}0`];
}

export function tenantStorage(tenant: string): TenantStorage {
  return storageOf(`t${createHash("sha256").update(tenant).digest("hex").slice(0, 24)}`);
}

/** Whether the tenant has written anything (its tables exist). */
export function tenantExists(db: Database, storage: TenantStorage): boolean {
  return statement(db, "SELECT 1 FROM tenants WHERE token = ?").get(storage.token) !== undefined;
}

/** The tenant's storage, created if missing; call inside the write transaction that needs it. */
export function ensureTenant(db: Database, tenant: string): TenantStorage {
  const storage = tenantStorage(tenant);
  if (tenantExists(db, storage)) return storage;
  statement(db, "INSERT INTO tenants (token, name) VALUES (?, ?)").run(storage.token, tenant);
  for (const table of [storage.textTable, storage.imageTextTable]) {
    db.exec(`CREATE VIRTUAL TABLE ${table} USING fts5 (body, tokenize = 'porter unicode61 remove_diacritics 2')`);
    // Without secure-delete a delete only adds a tombstone and the forgotten terms stay in the segments.
    db.exec(`INSERT INTO ${table} (${table}, rank) VALUES ('secure-delete', 1)`);
  }
  ensureLexicalTables(db, storage);
  return storage;
}

function storageOf(token: string): TenantStorage {
  return { token, textTable: `fts_text_${token}`, imageTextTable: `fts_image_text_${token}` };
}
