import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import pg from "pg";

/**
 * A real PostgreSQL server for the Postgres tests: a throwaway cluster started once per test file
 * (initdb into a temporary folder owned by the `postgres` user, a free loopback port, pgvector
 * installed in a template database), or an existing server named by `CAIRN_TEST_POSTGRES_URL` (a
 * role that may create roles and databases). Every case gets a fresh database owned by a role
 * that is neither a superuser nor exempt from row-level security, so the store's policies apply.
 */

const bin = "/usr/lib/postgresql/15/bin";
const installHint = "bash ../shared/vendor/pgvector/install.sh";
/** The role the store connects as: owns its database, but RLS applies to it (FORCE, no BYPASSRLS). */
export const appRole = "cairn_app";
const appPassword = "cairn-test";

/** Why the Postgres tests cannot run here, or undefined when they can. */
export function postgresSkipReason(): string | undefined {
  if (process.env.CAIRN_TEST_POSTGRES_URL) return undefined;
  if (!existsSync(join(bin, "postgres")) || !existsSync(join(bin, "initdb"))) {
    return `PostgreSQL 15 is not installed (${bin}/postgres): run \`${installHint}\` or set CAIRN_TEST_POSTGRES_URL`;
  }
  if (!existsSync("/usr/lib/postgresql/15/lib/vector.so")) {
    return `pgvector is not installed for PostgreSQL 15: run \`${installHint}\` or set CAIRN_TEST_POSTGRES_URL`;
  }
  if (process.getuid?.() === 0 && !postgresUser()) {
    return "running as root and there is no `postgres` user to run the throwaway cluster as (Postgres refuses root)";
  }
  return undefined;
}

export interface PostgresCluster {
  /** A fresh, empty database (pgvector installed) and the URL the store connects to it with, as the app role. */
  freshDatabase(): Promise<string>;
  /** A connection as a superuser of the cluster, for tests that look under the store. */
  admin(database: string): pg.Client;
  /** The throwaway cluster's data directory (`base/`, `pg_wal/`), for tests that read its files; undefined for an existing server. */
  dataDirectory(): string | undefined;
}

/**
 * Registers `before`/`after` hooks on the current test file that start and stop one cluster.
 * Call at the top level of a test file, and only when `postgresSkipReason()` is undefined.
 */
export function usePostgresCluster(): PostgresCluster {
  let server: Server | undefined;
  let counter = 0;
  const databases: string[] = [];
  before(async () => {
    server = process.env.CAIRN_TEST_POSTGRES_URL
      ? await existingServer(process.env.CAIRN_TEST_POSTGRES_URL)
      : await throwawayServer();
    await prepare(server);
  });
  after(async () => {
    if (!server) return;
    if (server.external) {
      const client = new pg.Client({ connectionString: server.adminUrl });
      await client.connect();
      try {
        for (const name of databases) await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    }
    server.stop();
  });
  const current = (): Server => {
    if (!server) throw new Error("the Postgres cluster is not started: call usePostgresCluster at the top level");
    return server;
  };
  return {
    async freshDatabase() {
      const started = current();
      const name = `cairn_t${process.pid}_${++counter}`;
      const client = new pg.Client({ connectionString: started.adminUrl });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name} OWNER ${appRole} TEMPLATE ${templateName(started)}`);
      } finally {
        await client.end();
      }
      databases.push(name);
      return urlFor(started.adminUrl, { database: name, user: appRole, password: appPassword });
    },
    admin(database) {
      return new pg.Client({ connectionString: urlFor(current().adminUrl, { database }) });
    },
    dataDirectory() {
      return current().dataDirectory;
    },
  };
}

interface Server {
  readonly adminUrl: string;
  readonly external: boolean;
  readonly dataDirectory?: string;
  stop(): void;
}

function templateName(server: Server): string {
  return server.external ? `cairn_template_${process.pid}` : "cairn_template";
}

/** The app role and a template database with pgvector, so each fresh database is a quick copy. */
async function prepare(server: Server): Promise<void> {
  const client = new pg.Client({ connectionString: server.adminUrl });
  await client.connect();
  try {
    const role = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [appRole]);
    if (role.rowCount === 0) {
      await client.query(
        `CREATE ROLE ${appRole} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD '${appPassword}'`,
      );
    }
    const template = templateName(server);
    await client.query(`DROP DATABASE IF EXISTS ${template}`);
    await client.query(`CREATE DATABASE ${template}`);
    const inTemplate = new pg.Client({ connectionString: urlFor(server.adminUrl, { database: template }) });
    await inTemplate.connect();
    try {
      await inTemplate.query("CREATE EXTENSION vector");
    } finally {
      await inTemplate.end();
    }
  } finally {
    await client.end();
  }
}

async function existingServer(url: string): Promise<Server> {
  return { adminUrl: url, external: true, stop: () => {} };
}

async function throwawayServer(): Promise<Server> {
  const root = process.getuid?.() === 0;
  const owner = root ? postgresUser() : undefined;
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
  run(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
  // Durability settings are off: a throwaway test cluster, never a store anyone keeps.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  run(join(bin, "pg_ctl"), ["-D", data, "-o", options, "-l", join(dir, "log"), "-w", "start"]);
  return {
    adminUrl: `postgresql://postgres@127.0.0.1:${port}/postgres`,
    external: false,
    dataDirectory: data,
    stop: () => {
      try {
        run(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

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

function urlFor(base: string, parts: { database: string; user?: string; password?: string }): string {
  const url = new URL(base);
  url.pathname = `/${parts.database}`;
  if (parts.user) url.username = parts.user;
  if (parts.password !== undefined) url.password = parts.password;
  return url.toString();
}
