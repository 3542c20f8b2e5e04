import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import BetterSqlite3, { type Database } from "better-sqlite3";
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
const keyPattern = /^ck_([a-f0-9]{16})_([A-Za-z0-9_-]{43})$/;

interface KeyRow {
  id: string;
  tenant: string;
  user: string | null;
  hash: Buffer;
  created_at: number;
  revoked_at: number | null;
}

/**
 * API keys bound to a tenant (and optionally a user), in `<store folder>/keys.sqlite`.
 *
 * @example
 * const keys = await KeyStore.open({ path: ".cairn" });
 * const { key } = keys.create({ tenant: "acme", user: "ana" }); // print once, then forget it
 * keys.verify(key); // → the record, or null for an unknown or revoked key
 */
export class KeyStore {
  readonly #db: Database;
  readonly #now: () => number;

  private constructor(db: Database, now: () => number) {
    this.#db = db;
    this.#now = now;
  }

  static async open(options: { path: string; now?: () => number }): Promise<KeyStore> {
    let db: Database | undefined;
    try {
      mkdirSync(options.path, { recursive: true });
      db = new BetterSqlite3(join(options.path, "keys.sqlite"));
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
      return new KeyStore(db, options.now ?? Date.now);
    } catch (error) {
      db?.close();
      throw new StoreError("open keys", error);
    }
  }

  /** Makes a key of 256 random bits. The plaintext is returned here and nowhere else. */
  create(binding: { tenant: string; user?: string }): CreatedApiKey {
    const scope = validateScope({ tenant: binding.tenant, user: binding.user ?? "any" });
    const id = randomBytes(8).toString("hex");
    const key = `ck_${id}_${randomBytes(32).toString("base64url")}`;
    const createdAt = this.#now();
    const user = binding.user === undefined ? null : scope.user;
    this.#db
      .prepare("INSERT INTO api_keys (id, tenant, user, hash, created_at) VALUES (?, ?, ?, ?, ?)")
      .run(id, scope.tenant, user, sha256(key), createdAt);
    return { key, record: toRecord({ id, tenant: scope.tenant, user, created_at: createdAt, revoked_at: null }) };
  }

  /** The key's record when it is known and not revoked, else null. */
  verify(key: string): ApiKeyRecord | null {
    const match = keyPattern.exec(key);
    if (!match) return null;
    const row = this.#db.prepare("SELECT * FROM api_keys WHERE id = ?").get(match[1]) as KeyRow | undefined;
    if (!row || row.revoked_at !== null) return null;
    return timingSafeEqual(row.hash, sha256(key)) ? toRecord(row) : null;
  }

  list(): ApiKeyRecord[] {
    const rows = this.#db.prepare("SELECT * FROM api_keys ORDER BY created_at, id").all() as KeyRow[];
    return rows.map(toRecord);
  }

  /** Keys that still open the door. */
  activeCount(): number {
    return (this.#db.prepare("SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL").get() as { n: number }).n;
  }

  revoke(id: string): ApiKeyRecord {
    if (!/^[a-f0-9]{16}$/.test(id))
      throw new InputError("id", "an API key id is 16 hex characters (see cairn keys list)");
    const changed = this.#db
      .prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL")
      .run(this.#now(), id).changes;
    const row = this.#db.prepare("SELECT * FROM api_keys WHERE id = ?").get(id) as KeyRow | undefined;
    if (!row || (changed === 0 && row.revoked_at === null)) throw new NotFoundError("API key", id);
    return toRecord(row);
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }
}

function sha256(key: string): Buffer {
  return createHash("sha256").update(key).digest();
}

function toRecord(row: Omit<KeyRow, "hash">): ApiKeyRecord {
  return Object.freeze({
    id: row.id,
    tenant: row.tenant,
    user: row.user,
    createdAt: new Date(row.created_at).toISOString(),
    revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at).toISOString(),
  });
}
