import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import BetterSqlite3, { type Database, type Statement } from "better-sqlite3";
import { InputError, NotFoundError, StoreError } from "../core/errors.ts";
import { validateScope } from "../core/scope.ts";

/** An API key as stored: never the key itself, only its SHA-256. */
export interface ApiKeyRecord {
  readonly id: string;
  readonly tenant: string;
  /** The user the key is bound to; null lets the caller name the user per request. */
  readonly user: string | null;
  readonly createdAt: string;
  readonly revokedAt: string | null;
}

export interface CreatedApiKey {
  /** The plaintext key, shown once: it cannot be recovered from the store. */
  readonly key: string;
  readonly record: ApiKeyRecord;
}

/** `ck_<id>_<secret>`: the id finds the row, the SHA-256 of the whole key is compared in constant time. */
export const keyPattern = /^ck_([a-f0-9]{16})_([A-Za-z0-9_-]{43})$/;

/**
 * Where API keys live: beside the store they open (`keys.sqlite` in the store folder, or the
 * `api_keys` table of the Postgres database), so every `cairn serve` on a shared database sees the
 * same keys and a revocation from any process takes effect at once.
 */
export interface KeyStore {
  /** Makes a key of 256 random bits. The plaintext is returned here and nowhere else. */
  create(binding: { tenant: string; user?: string }): Promise<CreatedApiKey>;
  /** The key's record when it is known and not revoked, else null. */
  verify(key: string): Promise<ApiKeyRecord | null>;
  list(): Promise<ApiKeyRecord[]>;
  /** Keys that still open the door. */
  activeCount(): Promise<number>;
  revoke(id: string): Promise<ApiKeyRecord>;
  close(): Promise<void>;
}

/**
 * The key store of the store at `location`: a `postgres://` URL keeps keys in that database,
 * anything else in `<folder>/keys.sqlite`.
 *
 * @example
 * const keys = await openKeyStore(".cairn");
 * const { key } = await keys.create({ tenant: "acme", user: "ana" }); // print once, then forget it
 * await keys.verify(key); // → the record, or null for an unknown or revoked key
 */
export async function openKeyStore(location: string, options: { now?: () => number } = {}): Promise<KeyStore> {
  if (/^postgres(ql)?:\/\//i.test(location)) {
    const { PostgresKeyStore } = await import("./postgres-key-store.ts");
    return PostgresKeyStore.open({ url: location, ...options });
  }
  return SqliteKeyStore.open({ path: location, ...options });
}

/** A new key and its row: the one place keys are made, for every backend. */
export function newKey(binding: { tenant: string; user?: string }): {
  key: string;
  id: string;
  tenant: string;
  user: string | null;
  hash: Buffer;
} {
  const scope = validateScope({ tenant: binding.tenant, user: binding.user ?? "any" });
  const id = randomBytes(8).toString("hex");
  const key = `ck_${id}_${randomBytes(32).toString("base64url")}`;
  return { key, id, tenant: scope.tenant, user: binding.user === undefined ? null : scope.user, hash: sha256(key) };
}

/** Whether `key` is the key stored as `hash` (constant time). */
export function keyMatches(hash: Buffer, key: string): boolean {
  return timingSafeEqual(hash, sha256(key));
}

export function checkKeyId(id: string): void {
  if (!/^[a-f0-9]{16}$/.test(id))
    throw new InputError("id", "an API key id is 16 hex characters (see cairn keys list)");
}

export interface KeyRow {
  id: string;
  tenant: string;
  user: string | null;
  hash: Buffer;
  created_at: number;
  revoked_at: number | null;
}

/** API keys bound to a tenant (and optionally a user), in `<store folder>/keys.sqlite`. */
export class SqliteKeyStore implements KeyStore {
  readonly #db: Database;
  readonly #now: () => number;
  /** Every authenticated request runs it: prepared once (preparing costs more than the lookup). */
  readonly #byId: Statement;

  private constructor(db: Database, now: () => number) {
    this.#db = db;
    this.#now = now;
    this.#byId = db.prepare("SELECT * FROM api_keys WHERE id = ?");
  }

  static async open(options: { path: string; now?: () => number }): Promise<SqliteKeyStore> {
    let db: Database | undefined;
    try {
      mkdirSync(options.path, { recursive: true });
      db = new BetterSqlite3(join(options.path, "keys.sqlite"));
      // Before WAL: another server opening the same new key store waits for the lock instead of failing.
      db.pragma("busy_timeout = 10000");
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = FULL");
      db.exec(`CREATE TABLE IF NOT EXISTS api_keys (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        user TEXT,
        hash BLOB NOT NULL,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      ) STRICT`);
      return new SqliteKeyStore(db, options.now ?? Date.now);
    } catch (error) {
      db?.close();
      throw new StoreError("open keys", error);
    }
  }

  async create(binding: { tenant: string; user?: string }): Promise<CreatedApiKey> {
    const { key, id, tenant, user, hash } = newKey(binding);
    const createdAt = this.#now();
    this.#db
      .prepare("INSERT INTO api_keys (id, tenant, user, hash, created_at) VALUES (?, ?, ?, ?, ?)")
      .run(id, tenant, user, hash, createdAt);
    return { key, record: toRecord({ id, tenant, user, created_at: createdAt, revoked_at: null }) };
  }

  async verify(key: string): Promise<ApiKeyRecord | null> {
    const match = keyPattern.exec(key);
    if (!match) return null;
    const row = this.#byId.get(match[1]) as KeyRow | undefined;
    if (!row || row.revoked_at !== null) return null;
    return keyMatches(row.hash, key) ? toRecord(row) : null;
  }

  async list(): Promise<ApiKeyRecord[]> {
    const rows = this.#db.prepare("SELECT * FROM api_keys ORDER BY created_at, id").all() as KeyRow[];
    return rows.map(toRecord);
  }

  async activeCount(): Promise<number> {
    return (this.#db.prepare("SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL").get() as { n: number }).n;
  }

  async revoke(id: string): Promise<ApiKeyRecord> {
    checkKeyId(id);
    const changed = this.#db
      .prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL")
      .run(this.#now(), id).changes;
    const row = this.#db.prepare("SELECT * FROM api_keys WHERE id = ?").get(id) as KeyRow | undefined;
    if (!row || (changed === 0 && row.revoked_at === null)) throw new NotFoundError("API key", id);
    return toRecord(row);
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }
}

function sha256(key: string): Buffer {
  return createHash("sha256").update(key).digest();
}

export function toRecord(row: Omit<KeyRow, "hash">): ApiKeyRecord {
  return Object.freeze({
    id: row.id,
    tenant: row.tenant,
    user: row.user,
    createdAt: new Date(row.created_at).toISOString(),
    revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at).toISOString(),
  });
}
