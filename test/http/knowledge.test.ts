import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { startServer } from "../../src/surfaces/http/server.ts";
import { drawPng, tempDir } from "../support/fixtures.ts";
import { livesInJudge } from "../support/judges.ts";

async function serve(t: TestContext) {
  const memory = await Memory.open({
    path: join(tempDir(t), "store"),
    models: createHashModels(),
    ownsModels: true,
    judge: livesInJudge,
  });
  const server = await startServer({ memory, keys: null, port: 0 });
  t.after(() => server.close());
  const headers = { "x-cairn-tenant": "acme", "x-cairn-user": "ana", "content-type": "application/json" };
  const post = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  const get = async (path: string, user = "ana") =>
    (await fetch(`${server.url}${path}`, { headers: { ...headers, "x-cairn-user": user } })).json();
  return { post, get };
}

type Knowledge = {
  total: number;
  memories: {
    sessions: string[];
    said: { text: string; speaker: string | null; images: { hash: string | null; caption: string | null }[] }[];
    replaced: { said: { text: string }[] }[];
  }[];
};

describe("GET /v1/knowledge: what Cairn knows about a user", () => {
  it("lists active memories newest first, in the words said, with images and the versions they replaced", async (t) => {
    const { post, get } = await serve(t);
    const png = (await drawPng({ shape: "square", color: "#f80", background: "#39f" })).toString("base64");
    const session = (key: string, time: string, text: string, images?: unknown[]) => ({
      session: key,
      time,
      turns: [{ speaker: "Ana", text, ...(images ? { images } : {}) }],
    });
    assert.equal(
      (await post("/v1/sessions", session("old", "2024-01-01T10:00:00Z", "Ana lives in Lisbon near the river.")))
        .status,
      201,
    );
    await post("/v1/sessions", session("noise", "2024-01-02T10:00:00Z", "The quarterly report is due on Friday."));
    await post(
      "/v1/sessions",
      session("new", "2024-02-10T10:00:00Z", "Ana lives in Porto now, near the sea.", [
        { data: png, caption: "the sea in Porto" },
      ]),
    );

    const known = (await get("/v1/knowledge")) as Knowledge;
    assert.equal(known.total, 2, "the replaced state is not a memory of its own");
    const [latest, other] = known.memories;
    assert.deepEqual(latest?.sessions, ["new"]);
    assert.equal(latest?.said[0]?.text, "Ana lives in Porto now, near the sea.");
    assert.equal(latest?.said[0]?.images[0]?.caption, "the sea in Porto");
    assert.match(latest?.said[0]?.images[0]?.hash ?? "", /^[0-9a-f]{64}$/);
    assert.equal(latest?.replaced[0]?.said[0]?.text, "Ana lives in Lisbon near the river.");
    assert.deepEqual(other?.sessions, ["noise"]);
    assert.deepEqual(other?.replaced, []);

    const paged = (await get("/v1/knowledge?limit=1&offset=1")) as Knowledge;
    assert.deepEqual(
      paged.memories.map((memory) => memory.sessions),
      [["noise"]],
    );
    assert.equal(((await get("/v1/knowledge", "ben")) as Knowledge).total, 0, "another user knows nothing of it");
    const bad = (await get("/v1/knowledge?limit=0")) as { error: { code: string; field: string } };
    assert.equal(bad.error.field, "query.limit");

    assert.equal((await post("/v1/forget", { session: "new" })).status, 200);
    const after = (await get("/v1/knowledge")) as Knowledge;
    assert.ok(
      after.memories.every((memory) => memory.said.every((turn) => !turn.text.includes("Porto"))),
      "a forgotten session is no longer known",
    );
  });
});
