import { isIP } from "node:net";
import { resolve as resolvePath } from "node:path";
import { openKeyStore } from "../../../auth/key-store.ts";
import { ConfigError, InputError } from "../../../core/errors.ts";
import { warmTokenCounter } from "../../../core/tokens.ts";
import { defaultReadWorkers, isPostgresUrl } from "../../../store/open-store.ts";
import { defaultMaxBodyBytes } from "../../http/app.ts";
import { listSetting } from "../../http/origin-policy.ts";
import { startServer } from "../../http/server.ts";
import { type CommonOptions, openMemory, scopeOf } from "../context.ts";
import { buildDemoMemory, demoOptions } from "./demo.ts";

export const serveHelp = `cairn serve [--host 127.0.0.1] [--port 7700] [--no-auth] [--max-body-mb 32] [--demo] [--read-workers N]
            [--allowed-hosts h1,h2:port] [--allowed-origins https://a.example] [--cors-origin https://a.example]
  HTTP API under /v1 (OpenAPI at /openapi.json), MCP at /mcp, dashboard at /. Every request needs an API key
  (cairn keys create) unless --no-auth, which is refused on a non-loopback host. --demo loads the example
  memory (tenant demo, user ana) when it is not there yet. Stops cleanly on SIGINT/SIGTERM.
  Only requests whose Host is localhost, 127.0.0.1 or [::1] with the bound port (or the --host address) are
  answered, and a browser Origin must be the same host: anything else is 403 (DNS rebinding, cross-site
  pages). --allowed-hosts (env CAIRN_ALLOWED_HOSTS) adds names a proxy or LAN uses; --allowed-origins
  (CAIRN_ALLOWED_ORIGINS) admits other sites' requests; --cors-origin (CAIRN_CORS_ORIGINS) also lets
  them read the answers (CORS is off by default). Lists are comma-separated. MCP's cairn_remember reads an
  image path only inside --image-folder DIR and fetches image URLs only with --allow-remote-images.
  --read-workers N (env CAIRN_READ_WORKERS): threads that answer searches on the SQLite store, each on its
  own read-only connection, so requests keep being accepted while searches run (default: cores − 1, at
  most 4, and none on 2 cores or fewer; 0 answers them on the server's own thread). A Postgres store reads
  on its connection pool instead.`;

export interface ServeFlags {
  readonly host?: string;
  readonly port?: string;
  readonly noAuth?: boolean;
  readonly maxBodyMb?: string;
  readonly readWorkers?: string;
  readonly demo?: boolean;
  readonly allowedHosts?: readonly string[];
  readonly allowedOrigins?: readonly string[];
  readonly corsOrigins?: readonly string[];
  readonly imageFolder?: string;
}

export function isLoopback(host: string): boolean {
  if (host === "localhost" || host === "::1") return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

function isWildcard(host: string): boolean {
  return host === "0.0.0.0" || host === "::" || host === "";
}

/** Serves until SIGINT or SIGTERM, then finishes in-flight requests and closes the store. */
export async function serve(options: CommonOptions, flags: ServeFlags): Promise<number> {
  const host = flags.host ?? "127.0.0.1";
  const port = Number(flags.port ?? 7700);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new InputError("--port", "must be 0-65535");
  const maxBodyBytes = flags.maxBodyMb === undefined ? defaultMaxBodyBytes : Number(flags.maxBodyMb) * 1024 * 1024;
  if (!Number.isFinite(maxBodyBytes) || maxBodyBytes <= 0) throw new InputError("--max-body-mb", "must be positive");
  const readWorkersSetting = flags.readWorkers ?? process.env.CAIRN_READ_WORKERS;
  const readWorkers = readWorkersSetting === undefined ? defaultReadWorkers() : Number(readWorkersSetting);
  if (!Number.isInteger(readWorkers) || readWorkers < 0 || readWorkers > 64) {
    throw new InputError("--read-workers", "must be a whole number from 0 to 64 (0: searches on the server's thread)");
  }
  if (flags.noAuth && !isLoopback(host)) {
    throw new InputError(
      "--no-auth",
      `refused on ${host}: without keys anyone who reaches the port reads every tenant. Bind 127.0.0.1, or create a key with cairn keys create --tenant T --db ${options.dbLabel}`,
    );
  }

  const origins = {
    // A specific address the socket is bound to cannot be rebound by DNS, so it is served as well.
    allowedHosts: [
      ...(isWildcard(host) || isLoopback(host) ? [] : [isIP(host) === 6 ? `[${host}]` : host]),
      ...listSetting(flags.allowedHosts ?? process.env.CAIRN_ALLOWED_HOSTS),
    ],
    allowedOrigins: listSetting(flags.allowedOrigins ?? process.env.CAIRN_ALLOWED_ORIGINS),
    corsOrigins: listSetting(flags.corsOrigins ?? process.env.CAIRN_CORS_ORIGINS),
  };

  const keys = flags.noAuth ? null : await openKeyStore(options.db);
  if (keys && (await keys.activeCount()) === 0) {
    await keys.close();
    throw new ConfigError(
      `no API keys in ${options.dbLabel}: create one with \`cairn keys create --tenant T [--user U] --db ${options.dbLabel}\`, or run with --no-auth on a loopback host`,
    );
  }
  const memory = await openMemory(options, { readWorkers }).catch(async (error) => {
    await keys?.close();
    throw error;
  });
  // The first request would otherwise pay for the token tables (~0.6 s).
  warmTokenCounter();
  try {
    if (flags.demo && (await memory.listSessions(scopeOf(demoOptions(options)), { limit: 1 })).length === 0) {
      const summary = await buildDemoMemory(memory, options, { progress: false });
      process.stdout.write(`loaded the example memory: ${summary.added} session(s) (tenant demo, user ana)\n`);
    }
  } catch (error) {
    await memory.close();
    await keys?.close();
    throw error;
  }

  const server = await startServer({
    memory,
    keys,
    host,
    port,
    maxBodyBytes,
    origins,
    mcp: {
      imageFolder: flags.imageFolder === undefined ? undefined : resolvePath(flags.imageFolder),
      imageUrls: options.allowRemoteImages,
    },
    log: (event) => process.stderr.write(`cairn serve: unexpected error: ${describe(event.error)}\n`),
  }).catch(async (error) => {
    await memory.close();
    await keys?.close();
    throw error;
  });
  process.stdout.write(
    [
      `Cairn listening on ${server.url} (store ${options.dbLabel}, profile ${options.profile}${isPostgresUrl(options.db) ? "" : `, ${readWorkers} read worker(s)`})`,
      flags.noAuth
        ? "AUTH IS OFF (--no-auth): the scope comes from X-Cairn-Tenant / X-Cairn-User headers"
        : "auth: Authorization: Bearer <key> (cairn keys create)",
      `hosts: localhost, 127.0.0.1, [::1]${origins.allowedHosts.length > 0 ? `, ${origins.allowedHosts.join(", ")}` : ""}; CORS ${origins.corsOrigins.length > 0 ? origins.corsOrigins.join(", ") : "off"}`,
      `API ${server.url}/v1  OpenAPI ${server.url}/openapi.json  MCP ${server.url}/mcp  dashboard ${server.url}/`,
      "",
    ].join("\n"),
  );

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  process.stdout.write(`${signal}: finishing in-flight requests, then closing the store\n`);
  await server.close();
  process.stdout.write("stopped\n");
  return 0;
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
