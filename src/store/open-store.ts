import type { SqliteStoreOptions } from "./sqlite/sqlite-store.ts";
import type { Store } from "./store.ts";

/**
 * Opens the embedded SQLite store (created on first use). The backend and its native bindings load
 * only when this is called, so a program that brings another `Store` never loads them.
 *
 * @example
 * const store = await openSqliteStore({ path: ".cairn" });
 * const memory = await Memory.open({ store, models });
 */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<Store> {
  const { SqliteStore } = await import("./sqlite/sqlite-store.ts");
  return SqliteStore.open(options);
}
