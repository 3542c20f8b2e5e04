import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { drawPng } from "../support/fixtures.ts";
import { session, startTestServer } from "./support.ts";

describe("HTTP appends and notes", () => {
  it("appends turns to a session by its key, acknowledges a retry, and refuses bad input unchanged", async (t) => {
    const server = await startTestServer(t);
    const { key } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const scope = { tenant: "acme", user: "ana" };
    assert.equal(
      (
        await server.request("/v1/sessions", {
          key,
          json: session("chat-7", [{ speaker: "Ana", text: "We bought a canoe" }]),
        })
      ).status,
      201,
    );
    const append = { turns: [{ speaker: "Ana", text: "It is teal with a zeppelin sticker" }] };
    const appended = await server.request("/v1/sessions/chat-7/turns", { key, json: append });
    assert.equal(appended.status, 201);
    const result = await appended.json();
    assert.equal(result.rawNodeIds.length, 1);
    const retry = await server.request("/v1/sessions/chat-7/turns", { key, json: append });
    assert.equal(retry.status, 200);
    assert.equal((await retry.json()).duplicate, true);

    const detail = await (await server.request("/v1/sessions/chat-7", { key })).json();
    assert.deepEqual(
      detail.rawNodes.map((node: { turn: number; text: string }) => [node.turn, node.text]),
      [
        [0, "We bought a canoe"],
        [1, "It is teal with a zeppelin sticker"],
      ],
    );
    const search = await (await server.request("/v1/search", { key, json: { text: "zeppelin" } })).json();
    assert.equal(search.items[0].rawNodeId, result.rawNodeIds[0]);

    const before = await server.memory.listRawNodes(scope, result.sessionId);
    for (const bad of [{ turns: [] }, { turns: [{ text: "x" }], time: "5" }, { turns: [{ text: "x" }], extra: 1 }]) {
      const refused = await server.request("/v1/sessions/chat-7/turns", { key, json: bad });
      assert.equal(refused.status, 400, JSON.stringify(bad));
      assert.equal((await refused.json()).error.code, "input");
    }
    assert.deepEqual(await server.memory.listRawNodes(scope, result.sessionId), before);
  });

  it("remembers a note with an image as its own session in the key's scope", async (t) => {
    const server = await startTestServer(t);
    const { key } = await server.keyStore().create({ tenant: "acme", user: "ana" });
    const png = await drawPng({ shape: "circle", color: "#c00", background: "#fff" });
    const response = await server.request("/v1/remember", {
      key,
      json: { text: "my new red helmet", images: [{ data: png.toString("base64"), caption: "red helmet" }] },
    });
    assert.equal(response.status, 201);
    const note = await response.json();
    assert.match(note.sessionKey, /^remember\/day\/\d{4}-\d{2}-\d{2}\/0001$/);
    const node = await server.memory.getRawNode({ tenant: "acme", user: "ana" }, note.rawNodeId);
    assert.equal(node.images.length, 1);
    const path = await server.request("/v1/remember", { key, json: { text: "x", images: [{ path: "/etc/passwd" }] } });
    assert.equal(path.status, 400, "local paths are refused over HTTP");
    const empty = await server.request("/v1/remember", { key, json: {} });
    assert.equal(empty.status, 400);
  });
});
