import pg from "pg";
import { NotFoundError, StoreError } from "../core/errors.ts";
import { migrate } from "../store/postgres/migrations.ts";
import {
  type ApiKeyRecord,
  type CreatedApiKey,
  checkKeyId,
  type KeyRow,
  type KeyStore,
  keyMatches,
  keyPattern,
  newKey,
  toRecord,
} from "./key-store.ts";

/** API keys in the `api_keys` table of the store's Postgres database (schema version 2 and later). */
export class PostgresKeyStore implements KeyStore {
  readonly #pool: pg.Pool;
  readonly #now: () => number;

  private constructor(pool: pg.Pool, now: () => number) {
    this.#pool = pool;
    this.#now = now;
  }

  static async open(options: { url: string; now?: () => number }): Promise<PostgresKeyStore> {
    // bigint columns come back as numbers: times in ms fit a double exactly.
    const pool = new pg.Pool({ connectionString: options.url, max: 2 });
    // An idle connection the server dropped must not crash the process; the next query reconnects.
    pool.on("error", () => {});
    try {
      const client = await pool.connect();
      try {
        await migrate(client, options.now ?? Date.now);
      } finally {
        client.release();
      }
      return new PostgresKeyStore(pool, options.now ?? Date.now);
    } catch (error) {
      await pool.end();
      throw new StoreError("open keys", error);
    }
  }

  async create(binding: { tenant: string; user?: string }): Promise<CreatedApiKey> {
    const { key, id, tenant, user, hash } = newKey(binding);
    const createdAt = this.#now();
    await this.#query('INSERT INTO api_keys (id, tenant, "user", hash, created_at) VALUES ($1, $2, $3, $4, $5)', [
      id,
      tenant,
      user,
      hash,
      createdAt,
    ]);
    return { key, record: toRecord({ id, tenant, user, created_at: createdAt, revoked_at: null }) };
  }

  async verify(key: string): Promise<ApiKeyRecord | null> {
    const match = keyPattern.exec(key);
    if (!match) return null;
    const [row] = await this.#query("SELECT * FROM api_keys WHERE id = $1", [match[1]]);
    if (!row || row.revoked_at !== null) return null;
    return keyMatches(row.hash, key) ? toRecord(row) : null;
  }

  async list(): Promise<ApiKeyRecord[]> {
    return (await this.#query("SELECT * FROM api_keys ORDER BY created_at, id")).map(toRecord);
  }

  async activeCount(): Promise<number> {
    const result = await this.#pool.query<{ n: string }>("SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL");
    return Number(result.rows[0]?.n ?? 0);
  }

  async revoke(id: string): Promise<ApiKeyRecord> {
    checkKeyId(id);
    await this.#query("UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", [this.#now(), id]);
    const [row] = await this.#query("SELECT * FROM api_keys WHERE id = $1", [id]);
    if (!row || row.revoked_at === null) throw new NotFoundError("API key", id);
    return toRecord(row);
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }

  async #query(sql: string, params: unknown[] = []): Promise<KeyRow[]> {
    try {
      const result = await this.#pool.query<{
        id: string;
        tenant: string;
        user: string | null;
        hash: Buffer;
        created_at: string;
        revoked_at: string | null;
      }>(sql, params);
      return result.rows.map((row) => ({
        ...row,
        created_at: Number(row.created_at),
        revoked_at: row.revoked_at === null ? null : Number(row.revoked_at),
      }));
    } catch (error) {
      throw new StoreError("api keys", error);
    }
  }
}
