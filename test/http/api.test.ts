import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import { createApp } from "../../src/surfaces/http/app.ts";
import { openApiPath } from "../../src/surfaces/http/openapi.ts";
import { drawPng } from "../support/fixtures.ts";
import { session, startTestServer } from "./support.ts";

const turnsWithImage = (png: Buffer) => [
  { speaker: "Ana", text: "We rented a kayak on Lake Bled last weekend." },
  { speaker: "Ana", text: "Look!", images: [{ data: png.toString("base64"), caption: "orange kayak on blue water" }] },
];

describe("HTTP API over a real socket", () => {
  it("answers every REST route for its own scope", async (t) => {
    const server = await startTestServer(t);
    const { key } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const png = await drawPng({ shape: "square", color: "#f80", background: "#39f" });

    const health = await server.request("/v1/health");
    assert.equal(health.status, 200);
    assert.deepEqual({ ...(await health.json()), version: "x" }, { status: "ok", version: "x", store: "sqlite" });

    const added = await server.request("/v1/sessions", { key, json: session("s1", turnsWithImage(png)) });
    assert.equal(added.status, 201);
    const result = await added.json();
    assert.equal(result.sessionKey, "s1");
    assert.equal(result.rawNodeIds.length, 2);
    assert.equal(result.duplicate, false);

    const again = await server.request("/v1/sessions", { key, json: session("s1", turnsWithImage(png)) });
    assert.equal(again.status, 200, "an identical session is a duplicate, not a new write");
    assert.equal((await again.json()).duplicate, true);

    const other = await server.request("/v1/sessions", {
      key,
      json: session("s1", [{ speaker: "Ana", text: "something else entirely" }]),
    });
    assert.equal(other.status, 409, "the same session id with other content conflicts");
    assert.equal((await other.json()).error.code, "conflict");

    const list = await (await server.request("/v1/sessions?limit=10&offset=0", { key })).json();
    assert.deepEqual(
      list.sessions.map((record: { key: string }) => record.key),
      ["s1"],
    );
    const detail = await (await server.request(`/v1/sessions/${result.sessionId}`, { key })).json();
    assert.equal(detail.session.id, result.sessionId);
    assert.equal(detail.rawNodes.length, 2);

    const node = await (await server.request(`/v1/raw-nodes/${result.rawNodeIds[1]}`, { key })).json();
    assert.equal(node.images[0].caption, "orange kayak on blue water");
    const hash = node.images[0].hash as string;
    assert.equal(hash, createHash("sha256").update(png).digest("hex"));

    const pack = await (
      await server.request("/v1/search", { key, json: { text: "kayak", budget: { rawNodes: 5 } } })
    ).json();
    assert.ok(pack.items.length > 0);
    assert.ok(pack.items.some((item: { images: unknown[] }) => item.images.length === 1));
    assert.equal(pack.mode, "cairn");
    const routed = await (
      await server.request("/v1/search", { key, json: { text: "kayak", mode: "route", budget: { pages: 1 } } })
    ).json();
    assert.equal(routed.mode, "route");
    assert.ok(routed.budget.used.pages <= 1, "the page budget holds over HTTP");
    assert.ok(routed.route.pages.length >= 1, "the route trace comes back");
    const imagePack = await (
      await server.request("/v1/search", {
        key,
        json: { image: { data: png.toString("base64") }, channels: ["image"] },
      })
    ).json();
    assert.equal(imagePack.query.image.hash, hash);
    const filtered = await server.request("/v1/search", {
      key,
      json: { text: "kayak", filters: { sessions: ["nope"] }, vision: false },
    });
    assert.equal(filtered.status, 200);
    assert.equal((await filtered.json()).items.length, 0);

    const entries = await (await server.request("/v1/entries", { key })).json();
    assert.equal(entries.entries.length, 1);
    const stats = await (await server.request("/v1/stats", { key })).json();
    assert.equal(stats.sessions, 1);
    assert.equal(stats.rawNodes, 2);

    const forget = await server.request("/v1/forget", { key, json: { session: "s1" } });
    assert.equal(forget.status, 200);
    assert.equal((await forget.json()).sessions, 1);
    assert.equal((await server.request(`/v1/sessions/${result.sessionId}`, { key })).status, 404);
    assert.equal((await server.request(`/v1/blobs/${hash}`, { key })).status, 404, "the orphaned blob went too");
    const audit = await (await server.request("/v1/audit?limit=50", { key })).json();
    assert.ok(audit.events.some((event: { action: string }) => event.action === "forget"));
  });

  it("streams blobs with their media type, the hash as ETag and immutable caching; thumbnails are WebP", async (t) => {
    const server = await startTestServer(t);
    const { key } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const png = await drawPng({ shape: "circle", color: "#0a0", size: 400 });
    const hash = createHash("sha256").update(png).digest("hex");
    assert.equal((await server.request("/v1/sessions", { key, json: session("b", turnsWithImage(png)) })).status, 201);

    const blob = await server.request(`/v1/blobs/${hash}`, { key });
    assert.equal(blob.status, 200);
    assert.equal(blob.headers.get("content-type"), "image/png");
    assert.equal(blob.headers.get("etag"), `"${hash}"`);
    assert.match(blob.headers.get("cache-control") ?? "", /immutable/);
    assert.deepEqual(Buffer.from(await blob.arrayBuffer()), png);

    const cached = await server.request(`/v1/blobs/${hash}`, { key, headers: { "if-none-match": `"${hash}"` } });
    assert.equal(cached.status, 304);

    const thumbnail = await server.request(`/v1/blobs/${hash}/thumbnail`, { key });
    assert.equal(thumbnail.status, 200);
    assert.equal(thumbnail.headers.get("content-type"), "image/webp");
    const bytes = Buffer.from(await thumbnail.arrayBuffer());
    assert.equal(bytes.subarray(8, 12).toString("latin1"), "WEBP");

    assert.equal((await server.request("/v1/blobs/not-a-hash", { key })).status, 400);
    assert.equal((await server.request(`/v1/blobs/${"0".repeat(64)}`, { key })).status, 404);
  });

  it("accepts multipart uploads whose images reference file parts", async (t) => {
    const server = await startTestServer(t);
    const { key } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const png = await drawPng({ shape: "stripes", color: "#080" });
    const form = new FormData();
    form.set(
      "session",
      JSON.stringify(
        session("m1", [{ speaker: "Ana", text: "green towel", images: [{ file: "towel", caption: "striped towel" }] }]),
      ),
    );
    form.set("towel", new Blob([new Uint8Array(png)], { type: "image/png" }), "towel.png");
    const added = await server.request("/v1/sessions", { key, body: form });
    assert.equal(added.status, 201, await added.clone().text());
    const node = await (await server.request(`/v1/raw-nodes/${(await added.json()).rawNodeIds[0]}`, { key })).json();
    assert.equal(node.images[0].hash, createHash("sha256").update(png).digest("hex"));

    const missingPart = new FormData();
    missingPart.set("session", JSON.stringify(session("m2", [{ text: "x", images: [{ file: "nope" }] }])));
    const refused = await server.request("/v1/sessions", { key, body: missingPart });
    assert.equal(refused.status, 400);
    assert.equal((await refused.json()).error.field, "body.turns[0].images[0].file");
  });

  it("refuses bad input with 400 and writes nothing", async (t) => {
    const server = await startTestServer(t);
    const { key } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const notAnImage = Buffer.from("this is not a png at all, just text").toString("base64");
    const bad = await server.request("/v1/sessions", {
      key,
      json: session("bad", [
        { speaker: "Ana", text: "fine turn" },
        { speaker: "Ana", text: "broken", images: [{ data: notAnImage }] },
      ]),
    });
    assert.equal(bad.status, 400);
    const body = await bad.json();
    assert.equal(body.error.code, "input");
    assert.match(body.error.field, /turns\[1\]\.images\[0\]/);

    const localPath = await server.request("/v1/sessions", {
      key,
      json: session("p", [{ text: "x", images: [{ path: "/etc/passwd" }] }]),
    });
    assert.equal(localPath.status, 400);
    assert.match((await localPath.json()).error.message, /paths are refused over HTTP/);

    const malformed = await server.request("/v1/sessions", {
      key,
      body: "{not json",
      headers: { "content-type": "application/json" },
    });
    assert.equal(malformed.status, 400);
    const text = await server.request("/v1/search", { key, body: "kayak", headers: { "content-type": "text/plain" } });
    assert.equal(text.status, 415);
    const noQuery = await server.request("/v1/search", { key, json: {} });
    assert.equal(noQuery.status, 400);
    const badPage = await server.request("/v1/sessions?limit=-1", { key });
    assert.equal(badPage.status, 400);
    assert.equal((await badPage.json()).error.field, "query.limit");
    const badForget = await server.request("/v1/forget", { key, json: { everything: true } });
    assert.equal(badForget.status, 400);
    const unknownRoute = await server.request("/v1/nope", { key });
    assert.equal(unknownRoute.status, 404);

    const stats = await (await server.request("/v1/stats", { key })).json();
    assert.equal(stats.sessions, 0, "nothing was written");
    assert.equal(stats.rawNodes, 0);
    assert.deepEqual(
      readdirSync(join(server.dir, "blobs"), { recursive: true }).filter((name) => String(name).endsWith(".png")),
      [],
      "no blob file left behind",
    );
  });

  it("adds a batch of sessions in one transaction: results in order, duplicates acknowledged, one bad session writes nothing", async (t) => {
    const server = await startTestServer(t);
    const { key } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const png = await drawPng({ shape: "circle", color: "#0a0", background: "#fff" });
    const batch = [
      session("b1", [{ speaker: "Ana", text: "The red bike is locked outside the library." }]),
      session("b2", turnsWithImage(png)),
      session("b3", [{ speaker: "Ana", text: "Miso slept on the sofa all day." }]),
    ];
    const added = await server.request("/v1/sessions/batch", { key, json: { sessions: batch } });
    assert.equal(added.status, 201);
    const { results } = await added.json();
    assert.deepEqual(
      results.map((result: { sessionKey: string; rawNodeIds: string[]; duplicate: boolean }) => [
        result.sessionKey,
        result.rawNodeIds.length,
        result.duplicate,
      ]),
      [
        ["b1", 1, false],
        ["b2", 2, false],
        ["b3", 1, false],
      ],
    );
    const pack = await (await server.request("/v1/search", { key, json: { text: "where is the red bike" } })).json();
    assert.ok(pack.items.some((item: { text: string }) => item.text.includes("red bike")));

    const again = await server.request("/v1/sessions/batch", { key, json: { sessions: batch } });
    assert.equal(again.status, 200, "every session already stored");
    assert.ok((await again.json()).results.every((result: { duplicate: boolean }) => result.duplicate));

    // A bad image in the third session, a user that is not the request's in another: 400 naming it, nothing written.
    const notAnImage = Buffer.from("not a png").toString("base64");
    const bad = await server.request("/v1/sessions/batch", {
      key,
      json: {
        sessions: [
          session("c1", [{ speaker: "Ana", text: "fine" }]),
          session("c2", [{ speaker: "Ana", text: "fine too" }]),
          session("c3", [{ text: "broken", images: [{ data: notAnImage }] }]),
        ],
      },
    });
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error.field, /^sessions\[2\]\.turns\[0\]\.images\[0\]/);
    const otherUser = await server.request("/v1/sessions/batch", {
      key,
      json: { sessions: [session("d1", [{ text: "x" }]), session("d2", [{ text: "y" }], { user: "bo" })] },
    });
    assert.equal(otherUser.status, 400);
    assert.equal((await otherUser.json()).error.field, "body.sessions[1].user");
    const conflict = await server.request("/v1/sessions/batch", {
      key,
      json: { sessions: [session("e1", [{ text: "new" }]), session("b1", [{ text: "other content" }])] },
    });
    assert.equal(conflict.status, 409);
    const empty = await server.request("/v1/sessions/batch", { key, json: { sessions: [] } });
    assert.equal(empty.status, 400);
    const stats = await (await server.request("/v1/stats", { key })).json();
    assert.equal(stats.sessions, 3, "only the first batch landed");
    assert.equal(stats.rawNodes, 4);
  });

  it("answers 413 for a body over the limit, before the SDK sees it", async (t) => {
    const server = await startTestServer(t, { maxBodyBytes: 64 * 1024 });
    const { key } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const big = session("big", [{ speaker: "Ana", text: "x".repeat(100 * 1024) }]);
    const response = await server.request("/v1/sessions", { key, json: big });
    assert.equal(response.status, 413);
    assert.equal((await response.json()).error.code, "too_large");

    // Without a Content-Length (chunked), the limit is enforced while reading.
    const chunks = new TextEncoder().encode(JSON.stringify(big));
    const streamed = await fetch(`${server.url}/v1/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: new ReadableStream({
        start(controller) {
          for (let offset = 0; offset < chunks.length; offset += 8192)
            controller.enqueue(chunks.slice(offset, offset + 8192));
          controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    assert.equal(streamed.status, 413);
    assert.equal((await (await server.request("/v1/stats", { key })).json()).sessions, 0);
  });

  it("keeps concurrent writers safe: parallel POSTs all land exactly once", async (t) => {
    const server = await startTestServer(t);
    const { key } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const png = await drawPng({ shape: "circle", color: "#33c" });
    const posts = Array.from({ length: 24 }, (_, index) => {
      // Every fourth one repeats the session before it: a duplicate, not a second copy.
      const number = index % 4 === 3 ? index - 1 : index;
      return server.request("/v1/sessions", {
        key,
        json: session(`p${number}`, [
          { speaker: "Ana", text: `parallel write number ${number}` },
          ...(number % 2 === 0
            ? [{ speaker: "Ana", text: "shared photo", images: [{ data: png.toString("base64") }] }]
            : []),
        ]),
      });
    });
    const responses = await Promise.all(posts);
    const statuses = responses.map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 201).length, 18, `statuses ${statuses.join(",")}`);
    assert.equal(statuses.filter((status) => status === 200).length, 6, "the repeats answer as duplicates");
    const distinct = 24 - 6;
    const stats = await (await server.request("/v1/stats", { key })).json();
    assert.equal(stats.sessions, distinct);
    const listed = await (await server.request("/v1/sessions?limit=100", { key })).json();
    assert.equal(new Set(listed.sessions.map((record: { key: string }) => record.key)).size, distinct);
  });
});

describe("HTTP authentication and scoping", () => {
  it("needs a valid key, scopes by its tenant, and holds a user-bound key to its user", async (t) => {
    const server = await startTestServer(t);
    const keys = server.keyStore();
    const acmeAna = (await keys.create({ tenant: "acme", user: "ana" })).key;
    const acmeAny = (await keys.create({ tenant: "acme" })).key;
    const globex = (await keys.create({ tenant: "globex", user: "ana" })).key;
    const png = await drawPng({ shape: "square", color: "#c00" });

    assert.equal((await server.request("/v1/stats")).status, 401, "missing key");
    assert.equal((await server.request("/v1/stats", { key: "ck_0000000000000000_nope" })).status, 401);
    const forged = `${acmeAna.slice(0, -4)}AAAA`;
    assert.equal((await server.request("/v1/stats", { key: forged })).status, 401, "right id, wrong secret");

    const added = await (
      await server.request("/v1/sessions", { key: acmeAna, json: session("s", turnsWithImage(png)) })
    ).json();
    const hash = createHash("sha256").update(png).digest("hex");

    for (const path of [
      `/v1/sessions/${added.sessionId}`,
      `/v1/raw-nodes/${added.rawNodeIds[0]}`,
      `/v1/blobs/${hash}`,
      `/v1/blobs/${hash}/thumbnail`,
    ]) {
      const response = await server.request(path, { key: globex });
      assert.equal(response.status, 404, `another tenant's id answers 404: ${path}`);
      assert.equal((await response.json()).error.code, "not_found");
    }
    const foreignForget = await server.request("/v1/forget", { key: globex, json: { rawNode: added.rawNodeIds[0] } });
    assert.equal(foreignForget.status, 404);
    const foreignSearch = await (await server.request("/v1/search", { key: globex, json: { text: "kayak" } })).json();
    assert.equal(foreignSearch.items.length, 0);

    const otherUser = await server.request("/v1/stats", { key: acmeAna, headers: { "x-cairn-user": "ben" } });
    assert.equal(otherUser.status, 403, "a key bound to ana cannot act as ben");
    const otherTenant = await server.request("/v1/stats", { key: acmeAna, headers: { "x-cairn-tenant": "globex" } });
    assert.equal(otherTenant.status, 403);
    const bodyUser = await server.request("/v1/sessions", {
      key: acmeAna,
      json: session("u", [{ text: "hi" }], { user: "ben" }),
    });
    assert.equal(bodyUser.status, 400, "the body cannot name another user either");

    assert.equal((await server.request("/v1/stats", { key: acmeAny })).status, 400, "an unbound key names its user");
    const asAna = await (
      await server.request("/v1/stats", { key: acmeAny, headers: { "x-cairn-user": "ana" } })
    ).json();
    assert.equal(asAna.sessions, 1, "an unbound key of the tenant sees ana's memory when it names her");
    const asBen = await (
      await server.request("/v1/stats", { key: acmeAny, headers: { "x-cairn-user": "ben" } })
    ).json();
    assert.equal(asBen.sessions, 0);

    const [record] = (await keys.list()).filter((entry) => entry.tenant === "globex");
    assert.ok(record);
    await keys.revoke(record.id);
    assert.equal((await server.request("/v1/stats", { key: globex })).status, 401, "a revoked key stops at once");

    const mcpWithout = await server.request("/mcp", {
      method: "POST",
      json: { jsonrpc: "2.0", id: 1, method: "ping" },
    });
    assert.equal(mcpWithout.status, 401, "MCP sits behind the same keys");
    const mcp = await server.request("/mcp", {
      key: acmeAna,
      json: { jsonrpc: "2.0", id: 1, method: "ping" },
      headers: { accept: "application/json, text/event-stream" },
    });
    assert.equal(mcp.status, 200, await mcp.clone().text());

    assert.equal((await server.request("/v1/health")).status, 200, "health needs no key");
    assert.equal((await server.request("/openapi.json")).status, 200, "the API description needs no key");
    const dashboard = await server.request("/");
    assert.equal(dashboard.status, 200);
    assert.match(dashboard.headers.get("content-type") ?? "", /text\/html/);
  });

  it("lists a tenant's users to a tenant-wide key only, inside the tenant's wall", async (t) => {
    const server = await startTestServer(t);
    const keys = server.keyStore();
    const acmeAdmin = (await keys.create({ tenant: "acme" })).key;
    const acmeAna = (await keys.create({ tenant: "acme", user: "ana" })).key;
    const globexAdmin = (await keys.create({ tenant: "globex" })).key;
    const add = (key: string, user: string, headers: Record<string, string> = {}) =>
      server.request("/v1/sessions", {
        key,
        headers: { "x-cairn-user": user, ...headers },
        json: { session: "s", time: "2024-05-08T13:56:00Z", turns: [{ text: `a note of ${user}` }] },
      });
    assert.equal((await add(acmeAdmin, "bo")).status, 201);
    assert.equal((await add(acmeAdmin, "bo", { "x-cairn-agent": "helper" })).status, 201);
    assert.equal((await add(acmeAna, "ana")).status, 201);
    assert.equal((await add(globexAdmin, "zed")).status, 201);

    const listed = await server.request("/v1/users", { key: acmeAdmin });
    assert.equal(listed.status, 200);
    assert.deepEqual(await listed.json(), {
      tenantWide: true,
      users: [
        { user: "ana", agent: null },
        { user: "bo", agent: null },
        { user: "bo", agent: "helper" },
      ],
    });
    assert.deepEqual(await (await server.request("/v1/users", { key: globexAdmin })).json(), {
      tenantWide: true,
      users: [{ user: "zed", agent: null }],
    });
    const userKey = await server.request("/v1/users", { key: acmeAna });
    assert.equal(userKey.status, 200);
    assert.deepEqual(
      await userKey.json(),
      { tenantWide: false, users: [{ user: "ana", agent: null }] },
      "a user's key sees that user alone",
    );
    assert.equal((await server.request("/v1/users")).status, 401);
    const foreign = await server.request("/v1/users", { key: acmeAdmin, headers: { "x-cairn-tenant": "globex" } });
    assert.equal(foreign.status, 403, "a key names its own tenant");
  });

  it("stores only the SHA-256 of each key", async (t) => {
    const server = await startTestServer(t);
    const { key, record } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const files = readdirSync(server.dir).filter((name) => name.startsWith("keys.sqlite"));
    assert.ok(files.includes("keys.sqlite"));
    // The secret is everything after `ck_<16 hex>_` (base64url, which may itself hold "_").
    const secret = key.slice("ck_".length + 16 + 1);
    assert.equal(secret.length, 43);
    for (const file of files) {
      const bytes = readFileSync(join(server.dir, file));
      assert.ok(!bytes.includes(key) && !bytes.includes(secret), `${file} holds no plaintext key`);
    }
    assert.deepEqual(await server.keyStore().verify(key), record);
    assert.equal(await server.keyStore().verify(`${key}x`), null);
  });

  it("without keys (--no-auth) takes the scope from headers", async (t) => {
    const server = await startTestServer(t, { auth: false });
    await server.request("/v1/sessions", {
      json: session("s", [{ text: "tenant header write" }]),
      headers: { "x-cairn-tenant": "t1", "x-cairn-user": "u1" },
    });
    const scoped = await (
      await server.request("/v1/stats", { headers: { "x-cairn-tenant": "t1", "x-cairn-user": "u1" } })
    ).json();
    assert.equal(scoped.sessions, 1);
    const defaults = await (await server.request("/v1/stats")).json();
    assert.equal(defaults.sessions, 0, "the default tenant and user are another scope");
    const badScope = await server.request("/v1/stats", { headers: { "x-cairn-user": "no/slashes" } });
    assert.equal(badScope.status, 400);
  });
});

describe("OpenAPI document", () => {
  it("is OpenAPI 3.1 with valid JSON Schemas and lists every route the app serves", async (t) => {
    const server = await startTestServer(t);
    const document = await (await server.request("/openapi.json")).json();
    assert.match(document.openapi, /^3\.1\.\d+$/);
    assert.equal(typeof document.info.title, "string");
    assert.equal(typeof document.info.version, "string");
    assert.equal(document.components.securitySchemes.apiKey.scheme, "bearer");

    const expected = [
      "get /v1/health",
      "post /v1/sessions",
      "post /v1/sessions/batch",
      "get /v1/sessions",
      "get /v1/sessions/{id}",
      "post /v1/sessions/{id}/turns",
      "post /v1/remember",
      "get /v1/video/entities",
      "get /v1/video/items/{id}",
      "get /v1/video/items/{id}/frames",
      "get /v1/video/search",
      "post /v1/video/answer",
      "get /v1/video/moments",
      "get /v1/video/facts",
      "get /v1/video/sources",
      "get /v1/video/entities/{id}/memory",
      "post /v1/video/rules",
      "get /v1/video/rules",
      "delete /v1/video/rules/{id}",
      "get /v1/video/notifications",
      "get /v1/video/notifications/stream",
      "post /v1/search",
      "get /v1/raw-nodes/{id}",
      "get /v1/blobs/{hash}",
      "get /v1/blobs/{hash}/thumbnail",
      "get /v1/entries",
      "get /v1/knowledge",
      "get /v1/users",
      "get /v1/audit",
      "get /v1/bank",
      "get /v1/stats",
      "post /v1/context",
      "post /v1/forget",
      "get /openapi.json",
      "post /mcp",
      "get /mcp",
      "delete /mcp",
    ];
    const listed = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method} ${path}`),
    );
    assert.deepEqual([...listed].sort(), [...expected].sort());
    const served = new Set(
      createApp({ memory: server.memory, keys: null })
        .routes.filter(
          (route) => route.path.startsWith("/v1") || route.path === "/mcp" || route.path === "/openapi.json",
        )
        .map((route) => `${route.method.toLowerCase()} ${openApiPath(route.path)}`),
    );
    assert.deepEqual([...served].sort(), [...expected].sort(), "the app serves exactly what the document lists");

    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    // Schemas refer to named components (#/components/schemas/X): resolve them inside the document.
    ajv.addSchema({ $id: documentId, components: document.components });
    const compile = (schema: object) =>
      ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${documentId}#/components/`)));
    let schemas = 0;
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, OperationLike>>)) {
      for (const [method, operation] of Object.entries(item)) {
        assert.ok(operation.operationId, `${method} ${path} has an operationId`);
        assert.ok(Object.keys(operation.responses).length > 0);
        for (const parameter of operation.parameters ?? []) {
          if (parameter.in === "path") assert.ok(path.includes(`{${parameter.name}}`), `${parameter.name} in ${path}`);
          compile(parameter.schema);
          schemas++;
        }
        for (const content of [
          ...Object.values(operation.requestBody?.content ?? {}),
          ...Object.values(operation.responses).flatMap((response) => Object.values(response.content ?? {})),
        ]) {
          compile(content.schema);
          schemas++;
        }
      }
    }
    assert.ok(schemas > 30, `compiled ${schemas} schemas`);
    const sessionSchema = document.paths["/v1/sessions"].post.requestBody.content["application/json"].schema;
    const validate = compile(sessionSchema);
    assert.ok(validate(session("s", [{ speaker: "Ana", text: "hi", images: [{ data: "aGk=", caption: "c" }] }])));
    assert.ok(!validate({ session: "s" }), "the document requires what the server requires");
  });
});

const documentId = "https://cairn.invalid/openapi.json";

interface OperationLike {
  operationId: string;
  parameters?: { name: string; in: string; schema: object }[];
  requestBody?: { content: Record<string, { schema: object }> };
  responses: Record<string, { content?: Record<string, { schema: object }> }>;
}
