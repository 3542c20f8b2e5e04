import { createHash } from "node:crypto";
import type { Database } from "better-sqlite3";
import type { VectorSpace } from "../records.ts";
import type { Neighbour } from "../vector-index.ts";
import { type TenantStorage, tenantOfKey, tenantStorage } from "./tenants.ts";
import type { SpaceRow, VectorRow, VectorTable } from "./vector-rows.ts";

/**
 * What the scoped store's parts need from the store that opened them: a narrow seam, so they never
 * import `SqliteStore` itself (which creates them) and the two cannot form an import cycle.
 */

/** The blob files a commit writes and a forget journals, by blob key `<owner>/<hash>` (see `BlobFiles`). */
export interface BlobFileStore {
  begin(keys: readonly string[]): string;
  put(key: string, data: Uint8Array, thumbnail: Uint8Array): void;
  settle(journalId: string, isKnown: (key: string) => boolean): void;
  read(key: string): Uint8Array;
  readThumbnail(key: string): Uint8Array;
}

/** The ANN index registry as searches, commits and forgets use it (see `VectorIndexes`). */
export interface VectorIndexHooks {
  readonly options: { readonly filterOverFetch: number };
  search(table: VectorTable, scopeKey: string, vector: Float32Array, k: number): Neighbour[] | null;
  afterCommit(scopeKey: string, rows: readonly VectorRow[]): void;
  beforeForget(scopeKey: string, tables: readonly VectorTable[]): void;
  afterForget(scopeKey: string, removed: readonly { table: string; rowids: readonly number[] }[]): void;
}

export interface StoreServices {
  readonly files: BlobFileStore;
  readonly vectorIndexes: VectorIndexHooks;
  /** The database file, which forget's erasure scan reads (decision 038). */
  readonly databasePath: string;
  now(): number;
  newId(prefix: string): string;
  /** Whether the database holds the blob of this key (`<owner>/<hash>`). */
  hasBlob(key: string): boolean;
  /** `hmac-sha256:<hex>` of a value under the store's audit secret (see `audit-key.ts`). */
  keyedHash(value: string): string;
  /** The vec0 table of a space, created on first use. */
  ensureSpace(space: VectorSpace): string;
  space(name: string): SpaceRow | undefined;
  spaces(): SpaceRow[];
}

/** One scope's view of the database: every statement a part runs binds `key`. */
export interface ScopeContext {
  readonly db: Database;
  readonly key: string;
  /** The tenant part of the key: what owns FTS tables and blob files (see tenants.ts). */
  readonly tenant: string;
  /** The tenant's table names and blob owner, derived once from `tenant`. */
  readonly tenantStorage: TenantStorage;
  /** FTS token standing for the scope, so lexical search is scoped inside the MATCH itself. */
  readonly scopeToken: string;
  readonly store: StoreServices;
}

export function createScopeContext(db: Database, key: string, store: StoreServices): ScopeContext {
  const tenant = tenantOfKey(key);
  return Object.freeze({ db, key, tenant, tenantStorage: tenantStorage(tenant), scopeToken: scopeTokenOf(key), store });
}

/** 24 hex digits (96 bits) of SHA-256: collision-free across any realistic number of scopes. */
export function scopeTokenOf(key: string): string {
  return `s${createHash("sha256").update(key).digest("hex").slice(0, 24)}`;
}
