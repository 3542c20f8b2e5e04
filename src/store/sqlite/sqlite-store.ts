import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Worker } from "node:worker_threads";
import BetterSqlite3, { type Database } from "better-sqlite3";
import * as sqliteVec from "sqlite-vec";
import { CairnError, ConfigError, ConflictError, StoreError } from "../../core/errors.ts";
import type { Scope } from "../../core/scope.ts";
import { scopeKey, validateScope, validateTenant } from "../../core/scope.ts";
import { keyedHash, keyedHashScheme } from "../audit-redaction.ts";
import type { VectorSpace } from "../records.ts";
import type { ScopedStore, Store } from "../store.ts";
import type { VectorIndexOptions } from "../vector-index-options.ts";
import { loadAuditSecret, replaceAuditSecret } from "./audit-key.ts";
import { BlobFiles, splitBlobKey } from "./blob-files.ts";
import { erasurePending, vacuum } from "./forget-erasure.ts";
import { rebuildLexicalIndex } from "./lexical-index.ts";
import { verifyLexicalIndex } from "./lexical-verify.ts";
import { migrate } from "./migrations.ts";
import type { ReadPool } from "./read-pool.ts";
import { numberOrUndefined, strings } from "./record-rows.ts";
import type { StoreServices } from "./scope-context.ts";
import { SqliteScopedStore } from "./sqlite-scoped-store.ts";
import { statement } from "./statements.ts";
import { tenantExists, tenantKeyRange, tenantStorage } from "./tenants.ts";
import { VectorIndexes } from "./vector-indexes.ts";
import { plainTableSql, type SpaceRow, vectorTableOf } from "./vector-rows.ts";

export interface SqliteStoreOptions {
  /** Folder holding `cairn.db` and the blob files; created if missing. */
  readonly path: string;
  readonly now?: () => number;
  readonly newId?: (prefix: string) => string;
  /** Approximate vector search (HNSW indexes under `<path>/ann/`); defaults in `defaultVectorIndexOptions`. */
  readonly vectorIndex?: Partial<VectorIndexOptions>;
  /**
   * Worker threads that answer the scoped store's searches and reads (`read-pool.ts`), each on its own
   * read-only connection: the thread that opened the store stays free (a server keeps accepting
   * requests) and one search's channel passes run side by side. 0 (the default) answers them on the
   * calling thread, as a one-shot command wants; `cairn serve` uses `defaultReadWorkers()` (open-store.ts).
   */
  readonly readWorkers?: number;
}

/**
 * Embedded default store: one SQLite file in WAL mode (FTS5 for BM25, sqlite-vec for
 * vectors partitioned by scope) plus content-addressed blob files beside it.
 */
export class SqliteStore implements Store, StoreServices {
  readonly kind = "sqlite";
  readonly db: Database;
  readonly files: BlobFiles;
  readonly now: () => number;
  readonly newId: (prefix: string) => string;
  /** Derived ANN indexes over the vec0 tables, one per (space, scope). */
  readonly vectorIndexes: VectorIndexes;
  readonly auditSecretPer = "store";
  readonly #path: string;
  #auditSecret: Buffer;
  #closed = false;
  #readPool: ReadPool | null = null;

  private constructor(
    db: Database,
    files: BlobFiles,
    auditSecret: Buffer,
    options: SqliteStoreOptions,
    role: { readonly follower: boolean } = { follower: false },
  ) {
    this.db = db;
    this.files = files;
    this.#auditSecret = auditSecret;
    this.#path = options.path;
    this.vectorIndexes = new VectorIndexes(db, {
      databasePath: join(options.path, "cairn.db"),
      folder: join(options.path, "ann"),
      spaceTable: (name) => {
        const space = this.space(name);
        return space && vectorTableOf(space);
      },
      options: options.vectorIndex,
      follower: role.follower,
    });
    this.now = options.now ?? Date.now;
    this.newId = options.newId ?? randomId;
  }

  /** The database file, which forget's erasure scan reads (decision 038). */
  get databasePath(): string {
    return join(this.#path, "cairn.db");
  }

  static async open(options: SqliteStoreOptions): Promise<SqliteStore> {
    let db: Database | undefined;
    try {
      mkdirSync(options.path, { recursive: true });
      db = new BetterSqlite3(join(options.path, "cairn.db"));
      // The busy timeout comes first: switching a new database to WAL takes a lock, and a process
      // opening the same new store at that moment must wait for it, not fail with "database is locked".
      db.pragma("busy_timeout = 10000");
      db.pragma("journal_mode = WAL");
      // FULL: an acknowledged session survives power loss too, not only a killed process.
      db.pragma("synchronous = FULL");
      db.pragma("foreign_keys = ON");
      // Deleted rows are overwritten with zeros, in the database and in the WAL, so forgotten
      // content does not linger in free space (issue 18). Costs a write of each freed cell and page.
      db.pragma("secure_delete = ON");
      sqliteVec.load(db);
      migrate(db, options.now ?? Date.now);
      // A forget killed between its commit and its checkpoint leaves earlier versions of the pages
      // it erased in the WAL: the next open moves the WAL into the database and truncates it.
      db.pragma("wal_checkpoint(TRUNCATE)");
      // One killed before its erasure was settled may have left old copies of the forgotten rows in
      // pages SQLite rebuilt; their values are gone with the rows, so the store vacuums (decision 038).
      // Another process writing for longer than the busy timeout leaves it pending for the next open.
      if (erasurePending(db)) vacuumUnlessBusy(db);
      const opened = db;
      const files = new BlobFiles(options.path, (work) => opened.transaction(work).immediate());
      files.init();
      const store = new SqliteStore(db, files, loadAuditSecret(options.path), options);
      const ownersOf = db.prepare("SELECT tenant FROM blobs WHERE hash = ?").pluck();
      files.adoptSharedLayout((hash) => ownersOf.all(hash) as string[]);
      files.recover((key) => store.hasBlob(key));
      const workers = options.readWorkers ?? 0;
      if (!Number.isInteger(workers) || workers < 0) {
        throw new ConfigError(`readWorkers must be a whole number of threads (0 = none), got ${workers}`);
      }
      if (workers > 0) {
        const { ReadPool } = await import("./read-pool.ts");
        store.#readPool = await ReadPool.start({
          path: options.path,
          workers,
          vectorIndex: options.vectorIndex,
          indexes: store.vectorIndexes,
        });
      }
      return store;
    } catch (error) {
      db?.close();
      if (CairnError.is(error) && error.code === "config") throw error;
      throw new StoreError("open", error);
    }
  }

  /**
   * A read worker's store (`read-worker.ts`): a read-only connection to a store another connection
   * opened (and migrated), whose ANN registry follows the main thread's commits instead of watching.
   * Only the scoped store's read methods may be called on it.
   */
  static openReader(options: Pick<SqliteStoreOptions, "path" | "vectorIndex">): SqliteStore {
    let db: Database | undefined;
    try {
      db = new BetterSqlite3(join(options.path, "cairn.db"), { readonly: true, fileMustExist: true });
      db.pragma("busy_timeout = 10000");
      sqliteVec.load(db);
      const opened = db;
      const files = new BlobFiles(options.path, (work) => opened.transaction(work).immediate());
      return new SqliteStore(db, files, loadAuditSecret(options.path), options, { follower: true });
    } catch (error) {
      db?.close();
      throw new StoreError("openReader", error);
    }
  }

  forScope(scope: Scope): ScopedStore {
    this.#assertOpen();
    const valid = validateScope(scope);
    return new SqliteScopedStore(this.db, this, valid, scopeKey(valid), this.#readPool);
  }

  /** The read pool's worker count (0 when searches run on the calling thread). */
  get readWorkers(): number {
    return this.#readPool?.size ?? 0;
  }

  /** The read pool's worker threads (none without a pool): for supervision, and tests that stop one. */
  get readPoolThreads(): readonly Worker[] {
    return this.#readPool?.threads ?? [];
  }

  /** A value's keyed hash under this store's audit secret: how a forgotten key is kept in the audit log. */
  keyedHash(value: string): string {
    return keyedHash(this.#auditSecret, value);
  }

  hasBlob(key: string): boolean {
    const { owner, hash } = splitBlobKey(key);
    return statement(this.db, "SELECT 1 FROM blobs WHERE tenant = ? AND hash = ?").get(owner, hash) !== undefined;
  }

  /** The vec0 table of a space, created on first use. Dimensions of an existing space must match. */
  ensureSpace(space: VectorSpace): string {
    const existing = this.space(space.name);
    if (existing) {
      if (existing.dimensions !== space.dimensions || existing.kind !== space.kind) {
        throw new StoreError(
          "ensureSpace",
          `vector space ${space.name} holds ${existing.dimensions}-d ${existing.kind} vectors, got ${space.dimensions}-d ${space.kind}`,
        );
      }
      return existing.table_name;
    }
    const count = numberOrUndefined(this.db.prepare("SELECT count(*) FROM vector_spaces").pluck().get()) ?? 0;
    const table = `vec_${count + 1}`;
    this.db.exec(
      `CREATE VIRTUAL TABLE ${table} USING vec0 (scope_key TEXT PARTITION KEY, session_rowid INTEGER, time_ms INTEGER, speaker TEXT, embedding FLOAT[${space.dimensions}] distance_metric=cosine)`,
    );
    this.db.exec(plainTableSql(table));
    this.db
      .prepare("INSERT INTO vector_spaces (name, kind, dimensions, table_name) VALUES (?, ?, ?, ?)")
      .run(space.name, space.kind, space.dimensions, table);
    return table;
  }

  space(name: string): SpaceRow | undefined {
    return statement(this.db, "SELECT * FROM vector_spaces WHERE name = ?").get(name) as SpaceRow | undefined;
  }

  async listScopes(options: { readonly tenant?: string } = {}): Promise<Scope[]> {
    this.#assertOpen();
    const [low, high] =
      options.tenant === undefined ? ["", "\u{10FFFF}"] : tenantKeyRange(validateTenant(options.tenant));
    const keys = strings(
      this.db
        .prepare(
          `SELECT scope_key FROM sessions WHERE scope_key >= @low AND scope_key < @high
           UNION SELECT scope_key FROM index_entries WHERE scope_key >= @low AND scope_key < @high ORDER BY 1`,
        )
        .pluck()
        .all({ low, high }),
    );
    return keys.map((key) => {
      const [tenant = "", user = "", agent = ""] = key.split("/");
      return agent ? { tenant, user, agent } : { tenant, user };
    });
  }

  async verifyLexical(tenant: string): Promise<string[]> {
    this.#assertOpen();
    const storage = tenantStorage(validateTenant(tenant));
    return tenantExists(this.db, storage) ? verifyLexicalIndex(this.db, storage) : [];
  }

  async rebuildLexical(tenant: string): Promise<void> {
    this.#assertOpen();
    const storage = tenantStorage(validateTenant(tenant));
    if (!tenantExists(this.db, storage)) return;
    this.db.transaction(() => {
      // FTS5's own index first (from the rows it stores), then Cairn's, which is built from FTS5's tokens.
      for (const table of [storage.textTable, storage.imageTextTable]) {
        this.db.prepare(`INSERT INTO ${table} (${table}) VALUES ('rebuild')`).run();
      }
      rebuildLexicalIndex(this.db, storage);
    })();
  }

  /** One secret for the whole store, whatever the tenant. */
  async readAuditSecret(tenant: string): Promise<Uint8Array | null> {
    this.#assertOpen();
    validateTenant(tenant);
    return Uint8Array.from(this.#auditSecret);
  }

  async adoptAuditSecret(tenant: string, secret: Uint8Array): Promise<void> {
    this.#assertOpen();
    validateTenant(tenant);
    if (this.#auditSecret.equals(secret)) return;
    const pattern = `%${keyedHashScheme}:%`;
    const used = this.db
      .prepare("SELECT 1 FROM audit_events WHERE subject LIKE ? OR details LIKE ? LIMIT 1")
      .get(pattern, pattern);
    if (used) {
      throw new ConflictError(
        "this store's audit log already holds hashes under its own audit secret: it cannot take another store's",
      );
    }
    replaceAuditSecret(this.#path, secret);
    this.#auditSecret = Buffer.from(secret);
  }

  async vectorSpaces(): Promise<VectorSpace[]> {
    this.#assertOpen();
    return this.spaces().map((row) => ({ name: row.name, kind: row.kind, dimensions: row.dimensions }));
  }

  spaces(): SpaceRow[] {
    return statement(this.db, "SELECT * FROM vector_spaces").all() as SpaceRow[];
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      // Workers first: nothing may still read through a connection of a store that says it is closed.
      await this.#readPool?.close();
      await this.vectorIndexes.close();
    } finally {
      this.db.close();
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreError("forScope", "store is closed");
  }
}

function randomId(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
}

function vacuumUnlessBusy(db: Database): void {
  try {
    vacuum(db);
  } catch (error) {
    if ((error as { code?: string }).code !== "SQLITE_BUSY") throw error;
  }
}
