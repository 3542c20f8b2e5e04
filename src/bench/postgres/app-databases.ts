import pg from "pg";
import type { PostgresServer } from "./throwaway-cluster.ts";

/**
 * Fresh databases on a server for the store to connect to as an application role that is neither a
 * superuser nor exempt from row-level security, so the store's policies apply (and cost) as in a
 * real deployment. Each database is a copy of a template with pgvector installed, owned by that role.
 */
export class AppDatabases {
  readonly #server: PostgresServer;
  readonly #naming: AppDatabaseNaming;
  readonly #created: string[] = [];
  #counter = 0;

  private constructor(server: PostgresServer, naming: AppDatabaseNaming) {
    this.#server = server;
    this.#naming = naming;
  }

  /** Creates the role (if missing) and the template database. */
  static async prepare(server: PostgresServer, naming: AppDatabaseNaming): Promise<AppDatabases> {
    const databases = new AppDatabases(server, naming);
    await databases.#withAdmin("postgres", async (client) => {
      const role = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [naming.role]);
      if (role.rowCount === 0) {
        await client.query(
          `CREATE ROLE ${naming.role} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD '${naming.password}'`,
        );
      }
      await client.query(`DROP DATABASE IF EXISTS ${naming.template}`);
      await client.query(`CREATE DATABASE ${naming.template}`);
    });
    await databases.#withAdmin(naming.template, (client) => client.query("CREATE EXTENSION vector"));
    return databases;
  }

  /** A new empty database (pgvector installed) and the URL the store connects to it with, as the app role. */
  async fresh(): Promise<string> {
    const name = `${this.#naming.prefix}_${++this.#counter}`;
    await this.#withAdmin("postgres", (client) =>
      client.query(`CREATE DATABASE ${name} OWNER ${this.#naming.role} TEMPLATE ${this.#naming.template}`),
    );
    this.#created.push(name);
    return urlFor(this.#server.adminUrl, { database: name, user: this.#naming.role, password: this.#naming.password });
  }

  /** A superuser connection to one database of the server, for a look under the store. */
  admin(database: string): pg.Client {
    return new pg.Client({ connectionString: urlFor(this.#server.adminUrl, { database }) });
  }

  /** Drops every database this created, and the template (a throwaway cluster goes away whole anyway). */
  async dropCreated(): Promise<void> {
    await this.#withAdmin("postgres", async (client) => {
      for (const name of [...this.#created, this.#naming.template]) {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      }
    });
    this.#created.length = 0;
  }

  async #withAdmin<T>(database: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = this.admin(database);
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }
}

/** Identifiers are interpolated into SQL: callers pass fixed names (letters, digits, underscores). */
export interface AppDatabaseNaming {
  readonly role: string;
  readonly password: string;
  readonly template: string;
  /** Databases are named `<prefix>_<n>`. */
  readonly prefix: string;
}

export function urlFor(base: string, parts: { database: string; user?: string; password?: string }): string {
  const url = new URL(base);
  url.pathname = `/${parts.database}`;
  if (parts.user) url.username = parts.user;
  if (parts.password !== undefined) url.password = parts.password;
  return url.toString();
}
