import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { request as httpRequest } from "node:http";
import { describe, it } from "node:test";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { cairnProcess } from "../support/cairn-process.ts";
import { cairnEntry } from "../support/compiled.ts";
import { tempDir } from "../support/fixtures.ts";
import { spawnServe } from "../support/serve-process.ts";

/** The CLI's entry: bin/cairn.js's module, compiled once for the run (test/support/compiled.ts). */
const bin = cairnEntry();

/** GET /v1/stats with exactly these Host and Origin headers (fetch may not send a forged Host). */
function hostRequest(port: string, headers: { host: string; origin?: string }) {
  return new Promise<{ status: number; allowOrigin: string | undefined }>((resolve, reject) => {
    const request = httpRequest({ host: "127.0.0.1", port, path: "/v1/stats", headers }, (response) => {
      response.resume();
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          allowOrigin: response.headers["access-control-allow-origin"] as string | undefined,
        }),
      );
    });
    request.on("error", reject);
    request.end();
  });
}

function cairn(args: string[]) {
  const result = spawnSync(process.execPath, [bin, ...args, "--profile", "hash"], {
    encoding: "utf8",
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("cairn serve and cairn keys as processes", () => {
  it("creates a key on the command line that then opens the API for its tenant only", async (t) => {
    const db = tempDir(t);
    const refused = cairn(["serve", "--db", db]);
    assert.equal(refused.code, 5, "no keys and no --no-auth: refuses to start");
    assert.match(refused.stderr, /cairn keys create --tenant/);

    const created = cairn(["keys", "create", "--tenant", "acme", "--user", "ana", "--db", db, "--json"]);
    assert.equal(created.code, 0, created.stderr);
    const { key, id, tenant, user } = JSON.parse(created.stdout);
    assert.deepEqual([tenant, user], ["acme", "ana"]);
    assert.equal(cairn(["keys", "create", "--db", db]).code, 2, "a key needs an explicit tenant");

    const listed = cairn(["keys", "list", "--db", db]);
    assert.equal(listed.code, 0);
    assert.match(listed.stdout, new RegExp(id));
    assert.ok(!listed.stdout.includes(key), "list never shows a key");

    const server = await spawnServe(t, ["--db", db]);
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const added = await fetch(`${server.url}/v1/sessions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ session: "k1", time: "2024-05-08T13:56:00Z", turns: [{ text: "the key works" }] }),
    });
    assert.equal(added.status, 201);
    assert.equal((await fetch(`${server.url}/v1/stats`)).status, 401);

    assert.equal((await cairnProcess(["keys", "revoke", id, "--db", db, "--profile", "hash"])).code, 0);
    assert.equal((await fetch(`${server.url}/v1/stats`, { headers })).status, 401, "revoked from another process");
    assert.equal(cairn(["keys", "revoke", "0123456789abcdef", "--db", db]).code, 3);

    server.child.kill("SIGTERM");
    assert.equal(await server.exited, 0, server.output());
  });

  it("takes allowed hosts from CAIRN_ALLOWED_HOSTS and CORS origins from --cors-origin, and refuses bad ones", async (t) => {
    const db = tempDir(t);
    const server = await spawnServe(t, ["--db", db, "--no-auth", "--cors-origin", "https://app.example.com"], {
      CAIRN_ALLOWED_HOSTS: "memory.example.com",
    });
    assert.match(
      server.output(),
      /hosts: localhost, 127\.0\.0\.1, \[::1\], memory\.example\.com; CORS https:\/\/app\.example\.com/,
    );
    const port = new URL(server.url).port;
    assert.equal((await hostRequest(port, { host: "memory.example.com" })).status, 200);
    assert.equal((await hostRequest(port, { host: "evil.example.com" })).status, 403);
    const cors = await hostRequest(port, { host: `127.0.0.1:${port}`, origin: "https://app.example.com" });
    assert.equal(cors.status, 200);
    assert.equal(cors.allowOrigin, "https://app.example.com");
    assert.equal(
      (await hostRequest(port, { host: `127.0.0.1:${port}`, origin: "https://evil.example.com" })).status,
      403,
    );
    server.child.kill("SIGTERM");
    assert.equal(await server.exited, 0, server.output());

    const bad = cairn(["serve", "--no-auth", "--port", "0", "--db", db, "--cors-origin", "app.example.com"]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /corsOrigins\[0\]: not an origin/);
  });

  it("refuses --no-auth on a non-loopback host with exit code 2", (t) => {
    const result = cairn(["serve", "--no-auth", "--host", "0.0.0.0", "--db", tempDir(t)]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--no-auth: refused on 0\.0\.0\.0/);
  });

  it("answers searches through its read workers and stops them on SIGTERM", async (t) => {
    const db = tempDir(t);
    const server = await spawnServe(t, ["--db", db, "--no-auth", "--demo", "--read-workers", "2"]);
    assert.match(server.output(), /2 read worker\(s\)/);
    const demo = { "x-cairn-tenant": "demo", "x-cairn-user": "ana", "content-type": "application/json" };
    const searches = await Promise.all(
      ["bike", "red bicycle", "what did ana buy"].map(async (text) => {
        const response = await fetch(`${server.url}/v1/search`, {
          method: "POST",
          headers: demo,
          body: JSON.stringify({ text, mode: "tri-path" }),
        });
        assert.equal(response.status, 200, await response.clone().text());
        return (await response.json()) as { items: unknown[] };
      }),
    );
    assert.ok(searches.every((pack) => pack.items.length > 0));
    server.child.kill("SIGTERM");
    assert.equal(await server.exited, 0, server.output());
    assert.equal(cairn(["serve", "--db", db, "--no-auth", "--read-workers", "-1"]).code, 2);
  });

  it("serves the demo memory (what npm start runs) and loses no acknowledged write on SIGTERM", async (t) => {
    const db = tempDir(t);
    const server = await spawnServe(t, ["--db", db, "--no-auth", "--demo"]);
    assert.match(server.output(), /AUTH IS OFF/);
    const demo = { "x-cairn-tenant": "demo", "x-cairn-user": "ana" };
    const sessions = await (await fetch(`${server.url}/v1/sessions`, { headers: demo })).json();
    assert.ok(sessions.sessions.length > 0, "the example memory is loaded");
    assert.equal((await fetch(`${server.url}/`)).status, 200, "the dashboard is there");

    // A write whose body is still arriving when SIGTERM lands: it must finish and be stored.
    const body = new TextEncoder().encode(
      JSON.stringify({ session: "late", time: "2024-05-08T13:56:00Z", turns: [{ text: "written during shutdown" }] }),
    );
    let finish: () => void = () => {};
    const bodyStarted = new Promise<void>((resolve) => {
      finish = resolve;
    });
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const write = fetch(`${server.url}/v1/sessions`, {
      method: "POST",
      headers: { ...demo, "content-type": "application/json" },
      body: new ReadableStream({
        async start(controller) {
          controller.enqueue(body.subarray(0, 10));
          finish();
          await released;
          controller.enqueue(body.subarray(10));
          controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    await bodyStarted;
    await new Promise((resolve) => setTimeout(resolve, 300));
    server.child.kill("SIGTERM");
    await new Promise((resolve) => setTimeout(resolve, 300));
    await assert.rejects(fetch(`${server.url}/v1/health`), "no new connections once shutdown began");
    release();
    const response = await write;
    assert.equal(response.status, 201, await response.clone().text());
    const { sessionId } = await response.json();
    assert.equal(await server.exited, 0, server.output());
    assert.match(server.output(), /SIGTERM: finishing in-flight requests/);

    const memory = await Memory.open({ path: db, models: createHashModels() });
    try {
      const stored = await memory.listRawNodes({ tenant: "demo", user: "ana" }, sessionId);
      assert.equal(stored[0]?.text, "written during shutdown", "the acknowledged write is on disk");
    } finally {
      await memory.close();
    }
  });
});
