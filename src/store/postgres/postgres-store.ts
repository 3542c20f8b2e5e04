import pg from "pg";
import { ConflictError, NotFoundError, StoreError } from "../../core/errors.ts";
import { KeyedQueue } from "../../core/keyed-queue.ts";
import type { Scope } from "../../core/scope.ts";
import { scopeKey, validateScope, validateTenant } from "../../core/scope.ts";
import { keyedHashScheme } from "../audit-redaction.ts";
import type { VectorSpace } from "../records.ts";
import type { ScopedStore, Store } from "../store.ts";
import { AnnIndexes, type AnnOptions } from "./ann-indexes.ts";
import { rebuildLexical, verifyLexical } from "./lexical-verify.ts";
import { migrate } from "./migrations.ts";
import { PostgresScopedStore } from "./postgres-scoped-store.ts";
import type { StoreServices, VectorSearchOptions } from "./scope-context.ts";
import { inTenant, poolTypes } from "./tenant-transaction.ts";
import { VectorSpaces } from "./vector-spaces.ts";

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database`. Connect as a role that is not a superuser and has no BYPASSRLS: row-level security is the second tenant wall. */
  readonly url: string;
  /** Refuse a database that holds no Cairn store instead of creating one (for commands that only read). */
  readonly mustExist?: boolean;
  /** Connections held open (default 10). */
  readonly maxConnections?: number;
  readonly now?: () => number;
  readonly newId?: (prefix: string) => string;
  readonly vectorSearch?: Partial<VectorSearchOptions>;
  /** The in-process ANN index of large scopes (decision 025): usearch graph settings, filter over-fetch, catch-up bound. */
  readonly vectorIndex?: Partial<AnnOptions>;
}

/**
 * Exact scans up to 2,000 vectors per scope and space, like the SQLite store's ANN threshold; above
 * it, the in-process ANN index (see `search-vectors.ts`, `ann-indexes.ts`).
 */
export const defaultVectorSearch: VectorSearchOptions = Object.freeze({ exactBelow: 2_000 });

/**
 * PostgreSQL + pgvector store: several stateless Cairn instances can share one database. Tenancy
 * has two walls: every statement of a scoped handle binds its scope key, and every table has a
 * row-level security policy keyed by the tenant that each transaction sets (`cairn.tenant`).
 * Blobs live in the database (bytea), owned by a tenant.
 *
 * @example
 * const store = await PostgresStore.open({ url: "postgres://cairn@db.internal/cairn" });
 * const memory = await Memory.open({ store, models });
 */
export class PostgresStore implements Store {
  readonly kind = "postgres";
  readonly auditSecretPer = "tenant";
  readonly #pool: pg.Pool;
  readonly #services: StoreServices;
  #closed = false;

  private constructor(pool: pg.Pool, options: PostgresStoreOptions) {
    this.#pool = pool;
    this.#services = Object.freeze({
      spaces: new VectorSpaces(pool),
      ann: new AnnIndexes(pool, options.vectorIndex),
      vectorSearch: Object.freeze({ ...defaultVectorSearch, ...options.vectorSearch }),
      writers: new KeyedQueue(),
      largeScopes: new Map(),
      now: options.now ?? Date.now,
      newId: options.newId ?? randomId,
    });
  }

  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.maxConnections ?? 10,
      types: poolTypes,
    });
    // An idle connection the server dropped must not crash the process; the next query reconnects.
    pool.on("error", () => {});
    try {
      const client = await pool.connect();
      try {
        if (options.mustExist) {
          const found = await client.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS found");
          if (!found.rows[0]?.found) throw new NotFoundError("store in database", client.database ?? "(default)");
        }
        await migrate(client, options.now ?? Date.now);
      } finally {
        client.release();
      }
      return new PostgresStore(pool, options);
    } catch (error) {
      await pool.end();
      if (error instanceof NotFoundError) throw error;
      throw new StoreError("open", error);
    }
  }

  forScope(scope: Scope): ScopedStore {
    this.#assertOpen("forScope");
    const valid = validateScope(scope);
    return new PostgresScopedStore(this.#pool, this.#services, valid, scopeKey(valid));
  }

  /**
   * Every scope holding sessions or index entries. The registry of scopes is the one table a
   * transaction may read across tenants (with `cairn.list_scopes` set); whether each still holds
   * data is then asked inside its own tenant's wall.
   */
  async listScopes(options: { readonly tenant?: string } = {}): Promise<Scope[]> {
    this.#assertOpen("listScopes");
    const tenants = options.tenant === undefined ? await this.#registeredTenants() : [validateTenant(options.tenant)];
    const keys: string[] = [];
    for (const tenant of tenants) {
      const held = await inTenant(
        this.#pool,
        tenant,
        "listScopes",
        (sql) =>
          sql.query<{ scope_key: string }>("SELECT scope_key FROM sessions UNION SELECT scope_key FROM index_entries"),
        { readOnly: true },
      );
      keys.push(...held.map((row) => row.scope_key));
    }
    return keys.sort().map((key) => {
      const [tenant = "", user = "", agent = ""] = key.split("/");
      return agent ? { tenant, user, agent } : { tenant, user };
    });
  }

  /** Tenants in the scope registry: the one read across tenants (with `cairn.list_scopes` set). */
  async #registeredTenants(): Promise<string[]> {
    const client = await this.#pool.connect();
    let registered: { scope_key: string; tenant: string }[];
    try {
      await client.query("BEGIN READ ONLY; SET LOCAL cairn.list_scopes = 'on'");
      registered = (await client.query<{ scope_key: string; tenant: string }>("SELECT scope_key, tenant FROM scopes"))
        .rows;
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK");
      throw new StoreError("listScopes", error);
    } finally {
      client.release();
    }
    return [...new Set(registered.map((row) => row.tenant))];
  }

  /** The tenant's audit secret (`audit_keys`, inside its wall), created by its first forget. */
  async readAuditSecret(tenant: string): Promise<Uint8Array | null> {
    this.#assertOpen("readAuditSecret");
    const valid = validateTenant(tenant);
    const [row] = await inTenant(
      this.#pool,
      valid,
      "readAuditSecret",
      (sql) => sql.query<{ secret: Buffer }>("SELECT secret FROM audit_keys WHERE tenant = $1", [valid]),
      { readOnly: true },
    );
    return row ? Uint8Array.from(row.secret) : null;
  }

  async adoptAuditSecret(tenant: string, secret: Uint8Array): Promise<void> {
    this.#assertOpen("adoptAuditSecret");
    const valid = validateTenant(tenant);
    await inTenant(this.#pool, valid, "adoptAuditSecret", async (sql) => {
      // The row is locked first: a forget of the tenant creating its secret meanwhile waits for this one.
      await sql.query("INSERT INTO audit_keys (tenant, secret) VALUES ($1, $2) ON CONFLICT (tenant) DO NOTHING", [
        valid,
        Buffer.from(secret),
      ]);
      const [row] = await sql.query<{ secret: Buffer }>("SELECT secret FROM audit_keys WHERE tenant = $1 FOR UPDATE", [
        valid,
      ]);
      if (row?.secret.equals(secret)) return;
      const pattern = `%${keyedHashScheme}:%`;
      const [used] = await sql.query("SELECT 1 FROM audit_events WHERE subject LIKE $1 OR details LIKE $1 LIMIT 1", [
        pattern,
      ]);
      if (used) {
        throw new ConflictError(
          `tenant ${valid}'s audit log already holds hashes under its own audit secret: it cannot take another store's`,
        );
      }
      await sql.query("UPDATE audit_keys SET secret = $2 WHERE tenant = $1", [valid, Buffer.from(secret)]);
    });
  }

  async verifyLexical(tenant: string): Promise<string[]> {
    this.#assertOpen("verifyLexical");
    const valid = validateTenant(tenant);
    return inTenant(this.#pool, valid, "verifyLexical", (sql) => verifyLexical(sql, valid), { readOnly: true });
  }

  async rebuildLexical(tenant: string): Promise<void> {
    this.#assertOpen("rebuildLexical");
    const valid = validateTenant(tenant);
    await inTenant(this.#pool, valid, "rebuildLexical", (sql) => rebuildLexical(sql, valid));
  }

  /** Every vector space the store holds vectors in: for administration (`cairn migrate`). */
  async vectorSpaces(): Promise<VectorSpace[]> {
    this.#assertOpen("vectorSpaces");
    try {
      const rows = await this.#pool.query<VectorSpace>(
        "SELECT name, kind, dimensions FROM vector_spaces ORDER BY table_name",
      );
      return rows.rows;
    } catch (error) {
      throw new StoreError("vectorSpaces", error);
    }
  }

  /**
   * Builds this process's ANN index of a scope's vectors in one space now if the scope has none, and
   * resolves once searches use it (they never wait for it; benchmarks and warm-up code can).
   * @example await store.vectorIndexReady("text:hash-256", { tenant: "acme", user: "ana" });
   */
  async vectorIndexReady(space: string, scope: Scope): Promise<void> {
    this.#assertOpen("vectorIndexReady");
    const valid = validateScope(scope);
    const row = await this.#services.spaces.named(space);
    if (!row) throw new NotFoundError("vector space", space);
    await this.#services.ann.ready(row, { key: scopeKey(valid), tenant: valid.tenant });
  }

  /** Vector rows in this process's ANN index of a scope's vectors in one space (0 while it has none). */
  async vectorIndexSize(space: string, scope: Scope): Promise<number> {
    this.#assertOpen("vectorIndexSize");
    const row = await this.#services.spaces.named(space);
    return row ? this.#services.ann.size(row, scopeKey(validateScope(scope))) : 0;
  }

  /** Dense searches this process answered from a graph in one round trip (decision 036): for tests and reports. */
  vectorIndexOneTripAnswers(): number {
    return this.#services.ann.oneTripAnswers;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#services.ann.close();
    await this.#pool.end();
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw new StoreError(operation, "store is closed");
  }
}

function randomId(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
}
