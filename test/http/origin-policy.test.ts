import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { describe, it } from "node:test";
import { InputError } from "../../src/core/errors.ts";
import { originPolicy } from "../../src/surfaces/http/origin-policy.ts";
import { session, startTestServer, type TestServer } from "./support.ts";

/** The fields these tests read; an answer without them fails the assertion that reads them. */
type Body = { error: { code: string; message: string; field?: string }; sessionId: string };

/**
 * DNS rebinding and cross-site requests, over a real socket. `fetch` cannot be trusted to send a
 * forged Host header, so these go through node:http, which sends exactly the headers given.
 */
async function raw(
  server: TestServer,
  path: string,
  init: { method?: string; headers?: Record<string, string>; json?: unknown } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Body }> {
  const url = new URL(server.url);
  const body = init.json === undefined ? undefined : JSON.stringify(init.json);
  const headers: Record<string, string> = { host: url.host, ...init.headers };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (path === "/mcp") headers.accept = "application/json, text/event-stream";
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path, method: init.method ?? (body ? "POST" : "GET"), headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : null;
          } catch {}
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed as Body });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "rebinding-test", version: "1" } },
};
const listSessions = {
  jsonrpc: "2.0",
  id: 2,
  method: "tools/call",
  params: { name: "cairn_list_sessions", arguments: {} },
};

const evil = "evil.example.com";

async function seeded(server: TestServer, key?: string) {
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  const added = await raw(server, "/v1/sessions", {
    headers,
    json: session("s1", [{ speaker: "Ana", text: "my bank PIN is 4321" }]),
  });
  assert.equal(added.status, 201, JSON.stringify(added.body));
  return { headers, sessionId: added.body.sessionId as string };
}

for (const auth of [false, true]) {
  describe(`Host and Origin checks (${auth ? "with API keys" : "--no-auth"})`, () => {
    async function setUp(t: Parameters<typeof startTestServer>[0]) {
      const server = await startTestServer(t, { auth });
      const key = auth ? (await server.keyStore().create({ tenant: "default", user: "default" })).key : undefined;
      const { headers, sessionId } = await seeded(server, key);
      return { server, headers, sessionId, port: new URL(server.url).port };
    }

    it("refuses a rebound Host on REST and /mcp, reads nothing and forgets nothing", async (t) => {
      const { server, headers, sessionId, port } = await setUp(t);
      const foreign = { ...headers, host: `${evil}:${port}` };
      const attempts = [
        await raw(server, "/v1/sessions", { headers: foreign }),
        await raw(server, `/v1/sessions/${sessionId}`, { headers: foreign }),
        await raw(server, "/v1/search", { headers: foreign, json: { text: "PIN" } }),
        await raw(server, `/v1/sessions/${sessionId}`, { headers: foreign, method: "DELETE" }),
        await raw(server, "/mcp", { headers: foreign, json: initialize }),
        await raw(server, "/mcp", { headers: foreign, json: listSessions }),
        await raw(server, "/openapi.json", { headers: foreign }),
        await raw(server, "/", { headers: foreign }),
        await raw(server, "/no/such/route", { headers: foreign }),
      ];
      for (const answer of attempts) {
        assert.equal(answer.status, 403);
        assert.equal(answer.body.error.code, "host_not_allowed");
        assert.equal(answer.body.error.field, "Host");
        assert.doesNotMatch(JSON.stringify(answer.body), /4321/);
      }
      const still = await raw(server, `/v1/sessions/${sessionId}`, { headers });
      assert.equal(still.status, 200, "the refused DELETE forgot nothing");
    });

    it("refuses a loopback name on another port, and Host values that are not host names", async (t) => {
      const { server, headers, port } = await setUp(t);
      for (const host of [`localhost:${Number(port) + 1}`, "localhost", `${evil}`, `127.0.0.1.${evil}:${port}`]) {
        const answer = await raw(server, "/v1/sessions", { headers: { ...headers, host } });
        assert.equal(answer.status, 403, host);
      }
      // @hono/node-server cannot build a URL from this one and answers 400 before the app runs.
      const userInfo = await raw(server, "/v1/sessions", { headers: { ...headers, host: `user@localhost:${port}` } });
      assert.ok(userInfo.status === 400 || userInfo.status === 403, String(userInfo.status));
      assert.doesNotMatch(JSON.stringify(userInfo.body), /4321/);
    });

    it("answers loopback names with the bound port", async (t) => {
      const { server, headers, port } = await setUp(t);
      for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`]) {
        const answer = await raw(server, "/v1/sessions", { headers: { ...headers, host } });
        assert.equal(answer.status, 200, host);
        const mcp = await raw(server, "/mcp", { headers: { ...headers, host }, json: initialize });
        assert.equal(mcp.status, 200, `${host} /mcp`);
      }
    });

    it("refuses a foreign Origin (a cross-site page) on REST and /mcp, and answers the same origin", async (t) => {
      const { server, headers, sessionId, port } = await setUp(t);
      for (const origin of [
        `http://${evil}`,
        `http://localhost:${Number(port) + 1}`,
        "null",
        `https://127.0.0.1:${port}x`,
      ]) {
        const read = await raw(server, "/v1/search", { headers: { ...headers, origin }, json: { text: "PIN" } });
        assert.equal(read.status, 403, origin);
        assert.equal(read.body.error.code, "origin_not_allowed");
        assert.equal(read.headers["access-control-allow-origin"], undefined);
        const forget = await raw(server, `/v1/sessions/${sessionId}`, {
          headers: { ...headers, origin },
          method: "DELETE",
        });
        assert.equal(forget.status, 403, origin);
        const mcp = await raw(server, "/mcp", { headers: { ...headers, origin }, json: listSessions });
        assert.equal(mcp.status, 403, `${origin} /mcp`);
        const preflight = await raw(server, "/v1/search", {
          method: "OPTIONS",
          headers: { origin, "access-control-request-method": "POST" },
        });
        assert.equal(preflight.status, 403, `${origin} preflight`);
        assert.equal(preflight.headers["access-control-allow-origin"], undefined);
      }
      const same = await raw(server, "/v1/search", {
        headers: { ...headers, origin: `http://127.0.0.1:${port}` },
        json: { text: "PIN" },
      });
      assert.equal(same.status, 200);
      assert.equal(same.headers["access-control-allow-origin"], undefined, "CORS is off by default");
      assert.equal((await raw(server, `/v1/sessions/${sessionId}`, { headers })).status, 200);
    });
  });
}

describe("Host and Origin settings for deployments", () => {
  it("serves names from allowedHosts and reads cross-origin only for a CORS origin", async (t) => {
    const server = await startTestServer(t, {
      auth: false,
      origins: { allowedHosts: ["memory.example.com"], corsOrigins: ["https://app.example.com"] },
    });
    await seeded(server);
    const proxied = await raw(server, "/v1/sessions", {
      headers: { host: "memory.example.com", origin: "https://memory.example.com" },
    });
    assert.equal(proxied.status, 200);
    const preflight = await raw(server, "/v1/search", {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example.com",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, authorization",
      },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers["access-control-allow-origin"], "https://app.example.com");
    assert.match(String(preflight.headers["access-control-allow-headers"]), /authorization/i);
    const read = await raw(server, "/v1/search", {
      headers: { origin: "https://app.example.com" },
      json: { text: "PIN" },
    });
    assert.equal(read.status, 200);
    assert.equal(read.headers["access-control-allow-origin"], "https://app.example.com");
    const other = await raw(server, "/v1/search", {
      headers: { origin: "https://other.example.com" },
      json: { text: "PIN" },
    });
    assert.equal(other.status, 403);
    assert.equal((await raw(server, "/v1/sessions", { headers: { host: "other.example.com" } })).status, 403);
  });

  it("admits an allowed origin's requests without letting it read the answers", async (t) => {
    const server = await startTestServer(t, {
      auth: false,
      origins: { allowedOrigins: ["https://tools.example.com"] },
    });
    const answer = await raw(server, "/v1/sessions", { headers: { origin: "https://tools.example.com" } });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers["access-control-allow-origin"], undefined);
  });

  it("refuses malformed settings with the field named", () => {
    assert.throws(
      () => originPolicy({ allowedHosts: ["http://x.example/path"] }, () => 1),
      (error) => error instanceof InputError && error.field === "allowedHosts[0]",
    );
    assert.throws(
      () => originPolicy({ corsOrigins: ["app.example.com"] }, () => 1),
      (error) => error instanceof InputError && error.field === "corsOrigins[0]",
    );
  });

  it("matches loopback names on any port only while no socket is bound (app.request)", () => {
    const unbound = originPolicy({}, () => undefined);
    assert.doesNotThrow(() => unbound.check(new Headers({ host: "localhost:9999" }), "http://localhost:9999/"));
    const bound = originPolicy({}, () => 7700);
    assert.throws(() => bound.check(new Headers({ host: "localhost:9999" }), "http://localhost:9999/"));
    assert.doesNotThrow(() => bound.check(new Headers({ host: "[::1]:7700" }), "http://[::1]:7700/"));
  });
});
