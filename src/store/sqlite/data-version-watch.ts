import type { Database } from "better-sqlite3";
import { numberOrUndefined } from "./record-rows.ts";

/**
 * Tracks `PRAGMA data_version`, which changes when another connection commits: what lets the ANN
 * registry tell that its loaded indexes may be stale, and write index files only while they are not.
 */
export class DataVersionWatch {
  readonly #db: Database;
  /** Set on first look: before it nothing is loaded that another connection's writes could make stale. */
  #seen: number | undefined;

  constructor(db: Database) {
    this.#db = db;
  }

  /** Whether another connection committed since the last look (never on the first look). */
  changedElsewhere(): boolean {
    const version = this.#read();
    if (version === this.#seen) return false;
    const first = this.#seen === undefined;
    this.#seen = version;
    return !first;
  }

  /**
   * Runs `write` holding SQLite's write lock, unless another connection committed since the last look:
   * a concurrent forget (which deletes index files under the same lock) can then never be overtaken by
   * a manifest describing the rows it removed.
   */
  underWriteLock(write: () => void): void {
    this.#db
      .transaction(() => {
        if (this.#read() !== this.#seen) return;
        write();
      })
      .immediate();
  }

  #read(): number | undefined {
    return numberOrUndefined(this.#db.pragma("data_version", { simple: true }));
  }
}
