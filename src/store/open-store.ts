import { existsSync } from "node:fs";
import { join } from "node:path";
import { NotFoundError } from "../core/errors.ts";
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

/**
 * Opens the store at `location` (the folder of the embedded SQLite store); `mustExist` refuses a
 * folder that holds no store instead of creating one, for commands that only read.
 */
export async function openStore(location: string, options: { readonly mustExist?: boolean } = {}): Promise<Store> {
  if (options.mustExist && !existsSync(join(location, "cairn.db"))) throw new NotFoundError("store", location);
  return openSqliteStore({ path: location });
}
