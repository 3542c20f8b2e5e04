import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { NotFoundError } from "../core/errors.ts";
import type { PostgresStoreOptions } from "./postgres/postgres-store.ts";
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
 * Opens the PostgreSQL + pgvector store (its schema migrated on first use). `pg` loads only when
 * this is called, so users of the embedded store never load it.
 *
 * @example
 * const store = await openPostgresStore({ url: "postgres://cairn@db.internal/cairn" });
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const { PostgresStore } = await import("./postgres/postgres-store.ts");
  return PostgresStore.open(options);
}

/** True for a `postgres://` or `postgresql://` URL: what `--db` takes for the Postgres store. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/**
 * Opens the store at `location`: a `postgres://…` / `postgresql://…` URL opens the Postgres store,
 * anything else is the folder of the embedded SQLite store. `mustExist` refuses a folder that holds
 * no store instead of creating one, for commands that only read (a database named by a URL is
 * connected to as it is: its schema is migrated on first open).
 *
 * @example
 * const store = await openStore(process.env.CAIRN_DB ?? ".cairn");
 */
export async function openStore(
  location: string,
  options: {
    readonly mustExist?: boolean;
    /** The SQLite store's read workers (`SqliteStoreOptions.readWorkers`); Postgres reads on its pool's connections. */
    readonly readWorkers?: number;
  } = {},
): Promise<Store> {
  if (isPostgresUrl(location)) return openPostgresStore({ url: location, mustExist: options.mustExist ?? false });
  if (options.mustExist && !existsSync(join(location, "cairn.db"))) throw new NotFoundError("store", location);
  return openSqliteStore({ path: location, ...(options.readWorkers ? { readWorkers: options.readWorkers } : {}) });
}

/**
 * Read workers a long-running server gives the SQLite store (decision 023): one core is left to the
 * server's own thread (HTTP, routing, packing) and the others, up to four, answer channel passes. On
 * two cores or fewer none: a worker's round trips then wait for a core the server's thread needs, and
 * on a 2-core machine the pool added ~15% CPU per search and lowered the rate the server kept up with
 * (BENCHMARKS.md, issue 20). One-shot commands use none: starting a thread costs more than it saves.
 */
export function defaultReadWorkers(cores = availableParallelism()): number {
  return cores > 2 ? Math.min(4, cores - 1) : 0;
}
