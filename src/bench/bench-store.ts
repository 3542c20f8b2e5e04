import { join } from "node:path";
import { openPostgresStore, openSqliteStore } from "../store/open-store.ts";
import type { Store } from "../store/store.ts";

/** The backends the harness can replay into. */
export const benchStoreNames = ["sqlite", "postgres"] as const;
export type BenchStoreName = (typeof benchStoreNames)[number];

/**
 * Where the harness keeps each replayed history: a fresh, empty store per history (its own SQLite
 * folder, or its own Postgres database), so no history's term statistics reach another's scores.
 */
export interface BenchStore {
  readonly name: BenchStoreName;
  /** How the store was provided, for the report. */
  readonly description: string;
  open(history: { readonly name: string; readonly dir: string }): Promise<Store>;
  close(): Promise<void>;
}

/** The embedded store: a folder per history under the run's work folder. */
export const sqliteBenchStore: BenchStore = Object.freeze<BenchStore>({
  name: "sqlite",
  description: "SQLite folder per history",
  open: ({ name, dir }) => openSqliteStore({ path: join(dir, name) }),
  close: async () => {},
});

/**
 * The Postgres store: a database per history on `CAIRN_BENCH_POSTGRES_URL` or a throwaway cluster.
 * `pg` loads only here, so the CLI (which imports this module) never loads it for SQLite.
 */
export async function openPostgresBenchStore(): Promise<BenchStore> {
  const { openBenchPostgres } = await import("./postgres/bench-postgres.ts");
  const postgres = await openBenchPostgres();
  return {
    name: "postgres",
    description: `Postgres database per history on a ${postgres.description}`,
    open: async () => openPostgresStore({ url: await postgres.freshDatabase() }),
    close: () => postgres.close(),
  };
}

export function isBenchStoreName(name: string): name is BenchStoreName {
  return (benchStoreNames as readonly string[]).includes(name);
}
