import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import { ModelMismatchError } from "../../src/core/errors.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";
import { snapshotTree } from "../support/store-snapshot.ts";

const ana = { tenant: "acme", user: "ana" };
const bo = { tenant: "acme", user: "bo" };

/** Raw evidence as stored: every row of the cold-store tables, and every blob and thumbnail file. */
function rawEvidence(path: string) {
  const db = new BetterSqlite3(join(path, "cairn.db"), { readonly: true });
  try {
    const rows = Object.fromEntries(
      ["sessions", "raw_nodes", "raw_node_images", "blobs"].map((table) => [
        table,
        db.prepare(`SELECT * FROM ${table} ORDER BY 1, 2`).all(),
      ]),
    );
    return { rows, blobs: snapshotTree(join(path, "blobs")), thumbs: snapshotTree(join(path, "thumbs")) };
  } finally {
    db.close();
  }
}

async function builtWith256(t: { after: (fn: () => void) => void }) {
  const dir = tempDir(t);
  writeFile(dir, "kayak.png", await drawPng({ shape: "square", color: "#f80", background: "#39f" }));
  const path = join(dir, "store");
  const built = await Memory.open({ path, models: createHashModels({ dimensions: 256 }) });
  await built.addSession(
    ana,
    {
      session: "lake",
      time: "2024-05-01T10:00:00Z",
      turns: [
        { speaker: "Ana", text: "We rented an orange kayak on Lake Bled." },
        { speaker: "Ana", images: [{ path: "kayak.png", caption: "the kayak on the shore" }] },
        { speaker: "Ben", text: "The rental was forty euros." },
      ],
    },
    { baseDir: dir },
  );
  await built.addSession(bo, { session: "b", time: "2024-05-02T10:00:00Z", turns: [{ text: "a zeppelin overhead" }] });
  await built.close();
  return path;
}

describe("reembed: vectors made again with the models in use, raw evidence untouched", () => {
  it("turns a model mismatch into a working store, byte-identical raw evidence, audited, and skips what is done", async (t) => {
    const path = await builtWith256(t);
    const before = rawEvidence(path);
    const memory = await Memory.open({ path, models: createHashModels({ dimensions: 128 }) });
    t.after(() => memory.close());
    await assert.rejects(memory.search(ana, "kayak"), ModelMismatchError);

    const progress: number[] = [];
    const [result] = await memory.reembed(ana, { onProgress: ({ done }) => progress.push(done) });
    assert.equal(result?.skipped, false);
    assert.equal(result?.result?.rawNodes, 3);
    assert.ok(result?.result?.from.some((name) => name.includes("256")));
    assert.ok(
      result?.result?.to.every((name) => !name.includes("256")) &&
        result?.result?.to.some((name) => name.includes("128")),
    );
    // Two text vectors per texted turn (turn text, and image text for the image turn), and the image's pixels.
    assert.ok((result?.result?.vectors ?? 0) >= 4);
    assert.deepEqual(progress.at(-1), 3);

    const pack = await memory.search(ana, "orange kayak");
    assert.deepEqual(pack.warnings, []);
    assert.equal(pack.items[0]?.text, "We rented an orange kayak on Lake Bled.");
    assert.ok(pack.channelsUsed.includes("dense"), "the dense channel reads the new vectors");
    const dense = await memory.search(ana, "orange kayak", { mode: "tri-path", channels: ["dense"] });
    assert.ok(dense.items.length > 0, "new vectors are searched");
    assert.deepEqual(rawEvidence(path), before, "raw nodes, images and blob files are byte-identical");
    assert.equal((await memory.checkIndex(ana)).violations.length, 0, "the index was rebuilt on the new vectors");
    const audit = await memory.listAudit(ana);
    assert.ok(audit.some((event) => event.action === "reembed"));

    // Another scope still holds the old vectors until it is re-embedded too; a second run skips the first.
    await assert.rejects(memory.search(bo, "zeppelin"), ModelMismatchError);
    const all = await memory.reembed();
    assert.deepEqual(
      all.map(({ scope, skipped }) => [scope.user, skipped]),
      [
        ["ana", true],
        ["bo", false],
      ],
    );
    assert.equal((await memory.search(bo, "zeppelin")).items[0]?.text, "a zeppelin overhead");
    const forced = await memory.reembed(ana, { force: true });
    assert.equal(forced[0]?.skipped, false);
    assert.deepEqual(rawEvidence(path), before);
  });

  it("makes the vectors a write makes: each turn embedded with its context, so re-embedding keeps that lever", async (t) => {
    const path = await builtWith256(t);
    const textVectors = async () => {
      const store = await SqliteStore.open({ path });
      try {
        const scoped = store.forScope(ana);
        const [session] = await scoped.readSessions({});
        const nodes = await scoped.readRawNodes({ sessionId: session?.id ?? "" });
        const [space] = (await scoped.vectorSpacesInUse()).filter((s) => s.kind === "text" && s.name.includes("256"));
        const vectors = await scoped.readVectors(
          space?.name ?? "",
          nodes.map((node) => node.id),
        );
        return nodes.map((node) => [...(vectors.get(node.id) ?? [])]);
      } finally {
        await store.close();
      }
    };
    const written = await textVectors();
    const memory = await Memory.open({ path, models: createHashModels({ dimensions: 256 }) });
    await memory.reembed(ana, { force: true });
    await memory.close();
    assert.deepEqual(await textVectors(), written, "the same models give the same vectors a write gave");
  });
});
