import type { Database } from "better-sqlite3";
import { vectorFromBlob } from "../vector-index.ts";
import { bytesOrUndefined, numberOrUndefined, numbers } from "./record-rows.ts";
import { imageSlots, plainTableOf, type VectorRow, type VectorTable } from "./vector-rows.ts";

/** What one (space, scope) partition is read by: its table and its scope key. */
export interface PartitionRef {
  readonly table: VectorTable;
  readonly scopeKey: string;
}

/** vec0 reads the ANN registry makes of one partition: its size, the rows an index lacks, their vectors. */
export class PartitionRows {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /**
   * vec0 keeps a validity bitmap per chunk of 1,024 vectors, tagged with the partition key: its set bits
   * are the exact count, read in milliseconds, where `count(*)` on vec0 reads every vector of every
   * partition (~0.5 s at 100k). That layout is sqlite-vec 0.1.9's (pinned); should it change, counting
   * the scope's raw nodes (or images) still gives an upper bound.
   */
  count(partition: PartitionRef): number {
    const { table, kind } = partition.table;
    try {
      const bitmaps = this.#db
        .prepare(`SELECT validity FROM ${table}_chunks WHERE partition00 = ?`)
        .pluck()
        .all(partition.scopeKey);
      return bitmaps.reduce<number>((sum, bitmap) => sum + countBits(bytesOrUndefined(bitmap)), 0);
    } catch {
      const sql =
        kind === "text"
          ? "SELECT count(*) FROM raw_nodes WHERE scope_key = ?"
          : "SELECT count(*) FROM raw_node_images i JOIN raw_nodes r ON r.rowid = i.raw_node_rowid WHERE r.scope_key = ?";
      return numberOrUndefined(this.#db.prepare(sql).pluck().get(partition.scopeKey)) ?? 0;
    }
  }

  /** Vector rowids of the partition above `maxRowid`: what a persisted index has not seen yet. */
  newerRowids(partition: PartitionRef, maxRowid: number): number[] {
    if (partition.table.kind === "text") {
      // `+scope_key` keeps SQLite on the rowid range instead of scanning the whole scope's index.
      return numbers(
        this.#db
          .prepare("SELECT rowid FROM raw_nodes WHERE rowid > ? AND +scope_key = ? ORDER BY rowid")
          .pluck()
          .all(maxRowid, partition.scopeKey),
      );
    }
    const rowids = this.#db
      .prepare(
        `SELECT i.raw_node_rowid * ${imageSlots} + i.ordinal AS rowid FROM raw_nodes r
         JOIN raw_node_images i ON i.raw_node_rowid = r.rowid WHERE r.rowid >= ? AND +r.scope_key = ? ORDER BY 1`,
      )
      .pluck()
      .all(Math.floor(maxRowid / imageSlots), partition.scopeKey);
    return numbers(rowids).filter((rowid) => rowid > maxRowid);
  }

  /** Point lookups in the plain copy of the vectors; rows without a vector in this space are skipped. */
  vectors(table: VectorTable, rowids: readonly number[]): VectorRow[] {
    const lookup = this.#db.prepare(`SELECT embedding FROM ${plainTableOf(table.table)} WHERE rowid = ?`).pluck();
    const rows: VectorRow[] = [];
    for (const rowid of rowids) {
      const blob = bytesOrUndefined(lookup.get(rowid));
      // Copied: the index keeps no reference, but pending changes may outlive the statement's buffer.
      if (blob) rows.push({ table: table.table, rowid, vector: vectorFromBlob(blob, table.dimensions).slice() });
    }
    return rows;
  }
}

const bitsInByte = Uint8Array.from({ length: 256 }, (_, byte) => {
  let bits = 0;
  for (let value = byte; value > 0; value >>= 1) bits += value & 1;
  return bits;
});

/** Set bits of a validity bitmap; a missing bitmap (NULL column) counts none. */
function countBits(bitmap: Uint8Array | undefined): number {
  let bits = 0;
  for (const byte of bitmap ?? []) bits += bitsInByte[byte] ?? 0;
  return bits;
}
