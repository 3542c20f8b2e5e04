import { StoreError } from "../../core/errors.ts";

/**
 * Rows only the SQLite store reads (FTS5 and vec0 hits, rowid look-ups) and the checks of plucked
 * columns; the cold record rows and their mappers are shared with Postgres (`../record-rows.ts`).
 */

/** A row's rowid and public id, what most look-ups by id return. */
export interface RowidIdRow {
  rowid: number;
  id: string;
}

/** One FTS5 hit: `rank` is negated BM25 (smaller is better). */
export interface LexicalHitRow {
  id: string;
  rank: number;
}

/** One vec0 KNN hit: `distance` is cosine distance. */
export interface VectorHitRow {
  rowid: number;
  distance: number;
}

/** One image of a raw node, as its vec0 rowid is derived from. */
export interface ImageSlotRow {
  raw_node_rowid: number;
  ordinal: number;
}

/** A plucked INTEGER column, or undefined when the row (or the value) is missing. */
export function numberOrUndefined(value: unknown): number | undefined {
  return typeof value === "number" ? value : undefined;
}

/** A plucked TEXT column, or null when the row (or the value) is missing. */
export function stringOrNull(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

/** A plucked BLOB column, or undefined when the row (or the value) is missing. */
export function bytesOrUndefined(value: unknown): Uint8Array | undefined {
  return value instanceof Uint8Array ? value : undefined;
}

/** Plucked INTEGER columns (rowids, counts): anything else means the schema is not what this code expects. */
export function numbers(values: readonly unknown[]): number[] {
  return values.map((value) => {
    if (typeof value !== "number") throw new StoreError("read", `expected an integer column, got ${typeof value}`);
    return value;
  });
}

/** Plucked TEXT columns (ids, hashes): anything else means the schema is not what this code expects. */
export function strings(values: readonly unknown[]): string[] {
  return values.map((value) => {
    if (typeof value !== "string") throw new StoreError("read", `expected a text column, got ${typeof value}`);
    return value;
  });
}
