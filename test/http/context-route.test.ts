import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { drawPng } from "../support/fixtures.ts";
import { startTestServer } from "./support.ts";

describe("POST /v1/context", () => {
  it("manages an OpenAI-format trajectory for the key's scope and keeps what it drops in that scope's memory", async (t) => {
    const server = await startTestServer(t);
    const { key } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const { key: otherKey } = await server.keyStore().create({ tenant: "acme", user: "bo" });
    const png = (await drawPng({ size: 256, label: "receipt" })).toString("base64");
    const messages = [
      { role: "system", content: "You are a shopping agent." },
      ...Array.from({ length: 24 }, (_, n) => [
        {
          role: "assistant",
          content: `Looking at shop ${n}.`,
          tool_calls: [{ id: `c${n}`, type: "function", function: { name: "visit", arguments: `{"shop":${n}}` } }],
        },
        { role: "tool", tool_call_id: `c${n}`, content: `Shop ${n} stocks ${"lamps chairs tables rugs ".repeat(60)}` },
        {
          role: "user",
          content: [
            { type: "text", text: `Receipt from shop ${n}` },
            { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } },
          ],
        },
      ]).flat(),
    ];
    const response = await server.request("/v1/context", {
      key,
      json: {
        messages,
        manager: "vera",
        budget: { window: 12_000, trigger: 6_000, keepRecent: 3 },
        trajectoryId: "shop",
      },
    });
    assert.equal(response.status, 200);
    const context = await response.json();
    assert.equal(context.managed, true);
    assert.ok(context.cost.total <= 12_000);
    assert.equal(context.messages[0].role, "system");
    assert.ok(
      context.messages.some(
        (message: { content: unknown }) =>
          Array.isArray(message.content) && JSON.stringify(message.content).includes("rendered as"),
      ),
    );
    assert.ok(context.evicted.written > 0);
    const own = await server.request("/v1/search", { key, json: { text: "Shop 0 stocks lamps" } });
    assert.ok((await own.json()).items.length > 0, "evicted messages are searchable in the caller's scope");
    const other = await server.request("/v1/search", { key: otherKey, json: { text: "Shop 0 stocks lamps" } });
    assert.equal((await other.json()).items.length, 0, "and in no other scope");
  });

  it("refuses a bad message with 400 naming the field, and an unknown manager", async (t) => {
    const server = await startTestServer(t);
    const { key } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const bad = await server.request("/v1/context", { key, json: { messages: [{ role: "tool", content: "x" }] } });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(await bad.json()), /toolCallId/);
    const unknown = await server.request("/v1/context", {
      key,
      json: { messages: [{ role: "user", content: "x" }], manager: "zip" },
    });
    assert.equal(unknown.status, 400);
    const noKey = await server.request("/v1/context", { json: { messages: [{ role: "user", content: "x" }] } });
    assert.equal(noKey.status, 401);
  });

  it("with force, manages a history below the trigger (a preview) and says each message's form", async (t) => {
    const server = await startTestServer(t);
    const { key } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const messages = Array.from({ length: 12 }, (_, n) => ({
      role: n % 2 ? "assistant" : "user",
      content: `Turn ${n}: ${"the ferry leaves the harbour at noon ".repeat(30)}`,
    }));
    const plain = await (
      await server.request("/v1/context", { key, json: { messages, manager: "visual-rendering", evict: false } })
    ).json();
    assert.equal(plain.managed, false);
    assert.deepEqual(new Set(plain.forms), new Set(["native"]));
    const forced = await (
      await server.request("/v1/context", {
        key,
        json: { messages, manager: "visual-rendering", budget: { keepRecent: 2 }, evict: false, force: true },
      })
    ).json();
    assert.equal(forced.managed, true);
    assert.deepEqual(
      forced.forms,
      ["rendered", "native", "native"],
      "all older turns fit on pages: nothing dropped, no pointer",
    );
    assert.equal(forced.forms.length, forced.messages.length);
  });
});
