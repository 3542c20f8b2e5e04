import type pg from "pg";
import { StoreError } from "../../core/errors.ts";
import type { VectorSpace } from "../records.ts";
import type { Sql } from "./tenant-transaction.ts";

/**
 * Vector spaces and their pgvector tables: one table per space, `vector(d)` column, indexed by
 * (scope, seq) and walled by tenant like every other table. No approximate index in the database:
 * each Cairn process keeps its own (usearch), caught up by `seq` (decision 025; `ann-indexes.ts`).
 * `seq` comes from one sequence, drawn by writers that hold their scope's lock, so within a scope
 * it grows in commit order. Text vectors are stored with ordinal -1, image vectors with their image's ordinal.
 */

export interface SpaceRow {
  readonly name: string;
  readonly kind: "text" | "image";
  readonly dimensions: number;
  readonly table_name: string;
}

/** The ordinal of a raw node's text vector; image vectors use their image's ordinal (0…). */
export const textOrdinal = -1;

/** pgvector's text form. A float32 widened to a double prints a decimal that parses back to the same float32. */
export function vectorLiteral(vector: Float32Array): string {
  return `[${Array.from(vector).join(",")}]`;
}

/**
 * pgvector's binary form (`vector_send(v)`: a 2-byte dimension count, 2 unused bytes, then
 * big-endian float32s) as a Float32Array: exact, and ~40% of the text form's bytes with no
 * decimal parsing — what a search that reads hundreds of vectors spends its time on.
 */
export function vectorFromSend(bytes: Uint8Array): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dimensions = view.getUint16(0, false);
  const vector = new Float32Array(dimensions);
  for (let position = 0; position < dimensions; position++) vector[position] = view.getFloat32(4 + position * 4, false);
  return vector;
}

/** Committed spaces, cached: a space row never changes once created. */
export class VectorSpaces {
  readonly #pool: pg.Pool;
  readonly #known = new Map<string, SpaceRow>();

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /** A committed space (read outside any transaction, so a space a failed commit created is never cached). */
  async named(name: string): Promise<SpaceRow | undefined> {
    const cached = this.#known.get(name);
    if (cached) return cached;
    const [row] = (await this.#pool.query<SpaceRow>("SELECT * FROM vector_spaces WHERE name = $1", [name])).rows;
    if (row) this.#known.set(name, row);
    return row;
  }

  /** Every space, as the transaction `sql` sees them. */
  async all(sql: Sql): Promise<SpaceRow[]> {
    return sql.query<SpaceRow>("SELECT * FROM vector_spaces ORDER BY table_name");
  }

  /**
   * The table of a space, created inside the caller's transaction on first use (so a failed commit
   * leaves no table behind). Writers creating spaces take turns on an advisory lock.
   */
  async ensure(sql: Sql, space: VectorSpace): Promise<SpaceRow> {
    const committed = await this.named(space.name);
    if (committed) return checked(committed, space);
    await sql.query("SELECT pg_advisory_xact_lock(hashtext('cairn.vector_spaces'))");
    const [existing] = await sql.query<SpaceRow>("SELECT * FROM vector_spaces WHERE name = $1", [space.name]);
    if (existing) return checked(existing, space);
    if (!Number.isInteger(space.dimensions) || space.dimensions < 1 || space.dimensions > 16_000) {
      throw new StoreError("ensureSpace", `vector space ${space.name} has ${space.dimensions} dimensions`);
    }
    const [count] = await sql.query<{ n: number }>("SELECT count(*) AS n FROM vector_spaces");
    const table = `vec_${(count?.n ?? 0) + 1}`;
    await sql.query(`
      CREATE TABLE ${table} (
        raw_node_rowid bigint NOT NULL REFERENCES raw_nodes (rowid) ON DELETE CASCADE,
        ordinal integer NOT NULL,
        tenant text NOT NULL,
        scope_key text NOT NULL,
        session_rowid bigint NOT NULL,
        time_ms bigint NOT NULL,
        speaker text,
        embedding vector(${space.dimensions}) NOT NULL,
        seq bigint NOT NULL DEFAULT nextval('vector_seq'),
        PRIMARY KEY (raw_node_rowid, ordinal)
      );
      CREATE UNIQUE INDEX ${table}_by_scope_seq ON ${table} (scope_key, seq);
      ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY;
      ALTER TABLE ${table} FORCE ROW LEVEL SECURITY;
      CREATE POLICY tenant_wall ON ${table}
        USING (tenant = current_setting('cairn.tenant', true))
        WITH CHECK (tenant = current_setting('cairn.tenant', true));`);
    const row: SpaceRow = { name: space.name, kind: space.kind, dimensions: space.dimensions, table_name: table };
    await sql.query("INSERT INTO vector_spaces (name, kind, dimensions, table_name) VALUES ($1, $2, $3, $4)", [
      row.name,
      row.kind,
      row.dimensions,
      row.table_name,
    ]);
    return row;
  }
}

function checked(existing: SpaceRow, space: VectorSpace): SpaceRow {
  if (existing.dimensions !== space.dimensions || existing.kind !== space.kind) {
    throw new StoreError(
      "ensureSpace",
      `vector space ${space.name} holds ${existing.dimensions}-d ${existing.kind} vectors, got ${space.dimensions}-d ${space.kind}`,
    );
  }
  return existing;
}
