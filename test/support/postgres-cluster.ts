import { after, before } from "node:test";
import type pg from "pg";
import { AppDatabases } from "../../src/bench/postgres/app-databases.ts";
import {
  externalServer,
  type PostgresServer,
  startThrowawayCluster,
  throwawayClusterUnavailable,
} from "../../src/bench/postgres/throwaway-cluster.ts";

/**
 * A real PostgreSQL server for the Postgres tests: a throwaway cluster started once per test file
 * (`src/bench/postgres/throwaway-cluster.ts`, shared with the benchmarks), or an existing server named by
 * `CAIRN_TEST_POSTGRES_URL` (a role that may create roles and databases). Every case gets a fresh
 * database owned by a role that is neither a superuser nor exempt from row-level security, so the
 * store's policies apply.
 */

/** The role the store connects as: owns its database, but RLS applies to it (FORCE, no BYPASSRLS). */
export const appRole = "cairn_app";

/** Why the Postgres tests cannot run here, or undefined when they can. */
export function postgresSkipReason(): string | undefined {
  if (process.env.CAIRN_TEST_POSTGRES_URL) return undefined;
  const reason = throwawayClusterUnavailable();
  return reason && `${reason} or set CAIRN_TEST_POSTGRES_URL`;
}

export interface PostgresCluster {
  /** A fresh, empty database (pgvector installed) and the URL the store connects to it with, as the app role. */
  freshDatabase(): Promise<string>;
  /** A connection as a superuser of the cluster, for tests that look under the store. */
  admin(database: string): pg.Client;
  /** Runs `read` on a superuser connection to the database `url` names, closed after: a look under the store. */
  inspect<T>(url: string, read: (client: pg.Client) => Promise<T>): Promise<T>;
  /** The throwaway cluster's data folder (its files and pg_wal); undefined for an existing server. */
  dataDirectory(): string | undefined;
}

/**
 * Registers `before`/`after` hooks on the current test file that start and stop one cluster.
 * Call at the top level of a test file, and only when `postgresSkipReason()` is undefined.
 */
export function usePostgresCluster(): PostgresCluster {
  let server: PostgresServer | undefined;
  let databases: AppDatabases | undefined;
  before(async () => {
    const url = process.env.CAIRN_TEST_POSTGRES_URL;
    // Durability settings are off: a throwaway test cluster, never a store anyone keeps.
    server = url
      ? externalServer(url)
      : await startThrowawayCluster({
          settings: { fsync: "off", synchronous_commit: "off", full_page_writes: "off" },
        });
    databases = await AppDatabases.prepare(server, {
      role: appRole,
      password: "cairn-test",
      template: server.external ? `cairn_template_${process.pid}` : "cairn_template",
      prefix: `cairn_t${process.pid}`,
    });
  });
  after(async () => {
    if (!server) return;
    try {
      if (server.external) await databases?.dropCreated();
    } finally {
      server.stop();
    }
  });
  const current = (): AppDatabases => {
    if (!databases) throw new Error("the Postgres cluster is not started: call usePostgresCluster at the top level");
    return databases;
  };
  return {
    freshDatabase: () => current().fresh(),
    admin: (database) => current().admin(database),
    async inspect(url, read) {
      const client = current().admin(new URL(url).pathname.slice(1));
      await client.connect();
      try {
        return await read(client);
      } finally {
        await client.end();
      }
    },
    dataDirectory: () => server?.dataDirectory,
  };
}
