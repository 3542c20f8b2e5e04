import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type KeyStore, openKeyStore } from "../../src/auth/key-store.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import type { OriginPolicyOptions } from "../../src/surfaces/http/origin-policy.ts";
import { type RunningServer, startServer } from "../../src/surfaces/http/server.ts";

export interface TestServer {
  readonly url: string;
  readonly dir: string;
  readonly keys: KeyStore | null;
  readonly memory: Memory;
  /** The key store; fails the test when the server runs without keys. */
  keyStore(): KeyStore;
  readonly server: RunningServer;
  /** fetch against the server with optional bearer key, JSON body and extra headers. */
  request(
    path: string,
    init?: { method?: string; key?: string; json?: unknown; body?: BodyInit; headers?: Record<string, string> },
  ): Promise<Response>;
}

/** A real server on an ephemeral loopback port over a fresh store, hash models; closed after the test. */
export async function startTestServer(
  t: { after: (fn: () => Promise<void> | void) => void },
  options: { auth?: boolean; maxBodyBytes?: number; origins?: OriginPolicyOptions } = {},
): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "cairn-http-"));
  const memory = await Memory.open({ path: dir, models: createHashModels() });
  const keys = options.auth === false ? null : await openKeyStore(dir);
  const unexpected: unknown[] = [];
  const server = await startServer({
    memory,
    keys,
    port: 0,
    maxBodyBytes: options.maxBodyBytes,
    origins: options.origins,
    log: (event) => unexpected.push(event.error),
  });
  t.after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
    if (unexpected.length > 0) throw new Error(`unexpected server errors: ${unexpected.map(String).join("; ")}`);
  });
  return {
    url: server.url,
    dir,
    keys,
    memory,
    server,
    keyStore() {
      if (!keys) throw new Error("this test server runs with --no-auth");
      return keys;
    },
    request(path, init = {}) {
      const headers: Record<string, string> = { ...init.headers };
      if (init.key) headers.authorization = `Bearer ${init.key}`;
      let body = init.body;
      if (init.json !== undefined) {
        headers["content-type"] = "application/json";
        body = JSON.stringify(init.json);
      }
      return fetch(`${server.url}${path}`, { method: init.method ?? (body ? "POST" : "GET"), headers, body });
    },
  };
}

export function session(key: string, turns: unknown[], extra: Record<string, unknown> = {}) {
  return { session: key, time: "2024-05-08T13:56:00Z", turns, ...extra };
}
