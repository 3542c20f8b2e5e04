import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { KeyStore } from "../../auth/key-store.ts";
import { ConfigError } from "../../core/errors.ts";
import type { Memory } from "../../memory.ts";
import { type AppOptions, createApp } from "./app.ts";

export interface ServerOptions extends AppOptions {
  readonly host?: string;
  /** 0 picks a free port (tests). */
  readonly port?: number;
  /** How long `close()` lets open connections finish before cutting them. Default 10 s. */
  readonly drainTimeoutMs?: number;
}

export interface RunningServer {
  readonly url: string;
  /** Stops accepting, waits for in-flight requests, then closes the memory and the key store. */
  close(): Promise<void>;
}

/**
 * Serves the app on a real socket. The server owns `memory` and `keys` from here on: `close()`
 * closes them after the last in-flight request has answered, so an acknowledged write is never cut.
 *
 * @example
 * const server = await startServer({ memory, keys, host: "127.0.0.1", port: 7700 });
 * process.once("SIGTERM", () => server.close());
 */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  let boundPort: number | undefined;
  const app = createApp({ ...options, boundPort: () => boundPort });
  const host = options.host ?? "127.0.0.1";
  let inFlight = 0;
  let closing = false;
  let drained: (() => void) | null = null;

  const server = serve({
    hostname: host,
    port: options.port ?? 7700,
    fetch: async (request, env) => {
      inFlight++;
      try {
        const response = await app.fetch(request, env);
        // Tell keep-alive clients to reconnect elsewhere once shutdown has begun.
        if (closing) response.headers.set("Connection", "close");
        return response;
      } finally {
        inFlight--;
        if (inFlight === 0) drained?.();
      }
    },
  }) as Server;

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(new ConfigError(`cannot listen on ${host}:${options.port ?? 7700}: ${error.code ?? error.message}`));
    };
    server.once("error", onError);
    server.once("listening", () => {
      server.off("error", onError);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  boundPort = address.port;
  const url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;

  let closed: Promise<void> | null = null;
  const close = () => {
    closed ??= shutdown(server, {
      begin: () => {
        closing = true;
      },
      idle: () =>
        inFlight === 0
          ? Promise.resolve()
          : new Promise<void>((resolve) => {
              drained = resolve;
            }),
      drainTimeoutMs: options.drainTimeoutMs ?? 10_000,
      memory: options.memory,
      keys: options.keys,
    });
    return closed;
  };
  return { url, close };
}

async function shutdown(
  server: Server,
  steps: {
    begin: () => void;
    idle: () => Promise<void>;
    drainTimeoutMs: number;
    memory: Memory;
    keys: KeyStore | null;
  },
): Promise<void> {
  steps.begin();
  const connectionsClosed = new Promise<void>((resolve) => server.close(() => resolve()));
  await steps.idle();
  server.closeIdleConnections();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    connectionsClosed,
    new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        server.closeAllConnections();
        resolve();
      }, steps.drainTimeoutMs);
    }),
  ]);
  clearTimeout(timer);
  try {
    await steps.memory.close();
  } finally {
    await steps.keys?.close();
  }
}
