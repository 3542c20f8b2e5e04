import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A PostgreSQL server the benchmarks and the Postgres tests connect to: a throwaway cluster
 * (initdb into a temporary folder, a free loopback port, stopped and deleted afterwards) or an
 * existing server named by a URL. Either way `adminUrl` is a role that may create roles and databases.
 */
export interface PostgresServer {
  readonly adminUrl: string;
  /** True for a server someone else runs: only what was created on it is removed. */
  readonly external: boolean;
  /** The cluster's data folder, for tests that look at what is on disk; unknown for an existing server. */
  readonly dataDirectory?: string;
  stop(): void;
}

const bin = "/usr/lib/postgresql/15/bin";
const installHint = "bash ../shared/vendor/pgvector/install.sh";

/** Why a throwaway cluster cannot start here, or undefined when it can. */
export function throwawayClusterUnavailable(): string | undefined {
  if (!existsSync(join(bin, "postgres")) || !existsSync(join(bin, "initdb"))) {
    return `PostgreSQL 15 is not installed (${bin}/postgres): run \`${installHint}\``;
  }
  if (!existsSync("/usr/lib/postgresql/15/lib/vector.so")) {
    return `pgvector is not installed for PostgreSQL 15: run \`${installHint}\``;
  }
  if (process.getuid?.() === 0 && !postgresUser()) {
    return "running as root and there is no `postgres` user to run the throwaway cluster as (Postgres refuses root)";
  }
  return undefined;
}

/** An existing server: nothing to start or stop. */
export function externalServer(adminUrl: string): PostgresServer {
  return { adminUrl, external: true, stop: () => {} };
}

/**
 * Starts a cluster as the `postgres` user when running as root (Postgres refuses root).
 * `settings` are passed as `-c name=value`, after the loopback listen address and `max_connections = 200`.
 */
export async function startThrowawayCluster(
  options: { readonly settings?: Readonly<Record<string, string>> } = {},
): Promise<PostgresServer> {
  const owner = process.getuid?.() === 0 ? postgresUser() : undefined;
  const dir = mkdtempSync(join(tmpdir(), "cairn-pg-"));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, "data");
  const port = await freePort();
  const run = (command: string, args: readonly string[]) => {
    if (owner) {
      const line = [command, ...args].map((part) => `'${part.replaceAll("'", "'\\''")}'`).join(" ");
      return execFileSync("su", ["postgres", "-s", "/bin/sh", "-c", line], { stdio: "pipe" });
    }
    return execFileSync(command, args, { stdio: "pipe" });
  };
  try {
    run(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
    const settings = { listen_addresses: "127.0.0.1", max_connections: "200", ...options.settings };
    const flags = Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`);
    run(join(bin, "pg_ctl"), [
      "-D",
      data,
      "-o",
      [`-p ${port}`, `-k ${dir}`, ...flags].join(" "),
      "-l",
      join(dir, "log"),
      "-w",
      "start",
    ]);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const stop = () => {
    if (!runningClusters.delete(stop)) return;
    try {
      run(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  stopOnExit(stop);
  return { adminUrl: `postgresql://postgres@127.0.0.1:${port}/postgres`, external: false, dataDirectory: data, stop };
}

/** Clusters this process started and has not stopped yet. */
const runningClusters = new Set<() => void>();

/**
 * A cluster goes with its process, however that ends: a normal exit, an uncaught error (a bench
 * piped into `head` dies of EPIPE), or SIGINT / SIGTERM / SIGHUP, which by default would end the
 * process without its exit handlers and leave the server running.
 */
function stopOnExit(stop: () => void): void {
  if (runningClusters.size === 0 && !exitHandlersInstalled) {
    exitHandlersInstalled = true;
    const stopAll = () => {
      for (const running of [...runningClusters]) {
        try {
          running();
        } catch {
          // The process is ending: the next cluster still gets its stop.
        }
      }
    };
    process.on("exit", stopAll);
    const signals = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 } as const;
    for (const [signal, number] of Object.entries(signals)) {
      process.on(signal, () => {
        stopAll();
        // A listener replaces the signal's default: when no one else listens, end the process as it would have.
        if (process.listenerCount(signal) === 1) process.exit(128 + number);
      });
    }
  }
  runningClusters.add(stop);
}
let exitHandlersInstalled = false;

function postgresUser(): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { stdio: "pipe" }).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { stdio: "pipe" }).toString().trim());
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
  } catch {
    return undefined;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
