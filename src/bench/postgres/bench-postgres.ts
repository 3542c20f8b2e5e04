import { AppDatabases } from "./app-databases.ts";
import {
  externalServer,
  type PostgresServer,
  startThrowawayCluster,
  throwawayClusterUnavailable,
} from "./throwaway-cluster.ts";

/** Names the server the benchmarks use instead of a throwaway cluster: a role that may create roles and databases. */
export const benchPostgresUrlVariable = "CAIRN_BENCH_POSTGRES_URL";

/**
 * Settings of the throwaway cluster. Durability stays at Postgres' defaults (fsync and synchronous
 * commit on), as the SQLite store runs WAL with `synchronous = FULL`: neither side buys speed with
 * durability. Shared buffers as in decision 009's measurements.
 */
export const benchClusterSettings: Readonly<Record<string, string>> = Object.freeze({ shared_buffers: "512MB" });

/** Databases for one benchmark run; `close` removes them (and stops a throwaway cluster). */
export interface BenchPostgres {
  /** Where the databases live, for the report: the URL's host and port, or "throwaway cluster". */
  readonly description: string;
  /** A new empty database for one store, as an application role that row-level security binds. */
  freshDatabase(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Opens the Postgres server for a benchmark run: the one `CAIRN_BENCH_POSTGRES_URL` names, or a
 * throwaway cluster started now (PostgreSQL 15 + pgvector installed locally).
 *
 * @example
 * const postgres = await openBenchPostgres();
 * const store = await openStore(await postgres.freshDatabase());
 */
export async function openBenchPostgres(env: NodeJS.ProcessEnv = process.env): Promise<BenchPostgres> {
  const url = env[benchPostgresUrlVariable];
  let server: PostgresServer;
  let description: string;
  if (url) {
    server = externalServer(url);
    const parsed = new URL(url);
    description = `${benchPostgresUrlVariable} (${parsed.hostname}:${parsed.port || "5432"})`;
  } else {
    const reason = throwawayClusterUnavailable();
    if (reason) throw new Error(`no Postgres for the benchmark: ${reason}, or set ${benchPostgresUrlVariable}`);
    server = await startThrowawayCluster({ settings: benchClusterSettings });
    description = `throwaway PostgreSQL 15 cluster (${Object.entries(benchClusterSettings)
      .map(([name, value]) => `${name}=${value}`)
      .join(", ")}; durability defaults)`;
  }
  try {
    const databases = await AppDatabases.prepare(server, {
      role: "cairn_bench",
      password: "cairn-bench",
      template: `cairn_bench_template_${process.pid}`,
      prefix: `cairn_bench_${process.pid}`,
    });
    return {
      description,
      freshDatabase: () => databases.fresh(),
      async close() {
        try {
          if (server.external) await databases.dropCreated();
        } finally {
          server.stop();
        }
      },
    };
  } catch (error) {
    server.stop();
    throw error;
  }
}
