import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { InputError } from "../../src/core/errors.ts";
import { countTokens } from "../../src/core/tokens.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";

const scope = { tenant: "acme", user: "ana" };

async function openWithHistory(t: { after: (fn: () => void | Promise<void>) => void }) {
  const dir = tempDir(t);
  writeFile(dir, "boat.png", await drawPng({ shape: "square", color: "#f80", background: "#39f" }));
  writeFile(dir, "towel.png", await drawPng({ shape: "stripes", color: "#080" }));
  const memory = await Memory.open({ path: join(dir, "store"), models: createHashModels() });
  t.after(() => memory.close());
  await memory.addSession(
    scope,
    {
      session: "may",
      time: "2024-05-01T10:00:00Z",
      turns: [
        {
          speaker: "Ana",
          text: "We rented a kayak on Lake Bled.",
          images: [{ path: "boat.png", caption: "orange kayak" }],
        },
        { speaker: "Ben", text: "The kayak rental was forty euros." },
        {
          speaker: "Ana",
          images: [{ unavailable: "https://example.com/gone.jpg", caption: "a sunset over the lake pier" }],
        },
      ],
    },
    { baseDir: dir },
  );
  await memory.addSession(
    scope,
    {
      session: "june",
      time: "2024-06-01T10:00:00Z",
      turns: [
        { speaker: "Ana", text: "Bought a striped beach towel for the kayak trip.", images: [{ path: "towel.png" }] },
        { speaker: "Ben", text: "Another kayak trip in June then." },
      ],
    },
    { baseDir: dir },
  );
  return { memory, dir };
}

describe("Memory.search", () => {
  it("keeps caption-only images as evidence without pixels: searchable by caption, not charged as images", async (t) => {
    const { memory } = await openWithHistory(t);
    const pack = await memory.search(scope, "sunset pier");
    const item = pack.items[0];
    assert.ok(item);
    assert.deepEqual(item.imagesAsText, [
      { hash: null, caption: "a sunset over the lake pier", derivedText: null, origin: "https://example.com/gone.jpg" },
    ]);
    assert.deepEqual(item.images, []);
    assert.ok(item.channels.imageText, "found through the caption");
    assert.ok(item.textTokens > 0, "the caption is text the reader is handed");
    assert.equal(
      pack.budget.used.images,
      new Set(pack.items.flatMap((hit) => hit.images.map((image) => image.hash))).size,
    );
    const noImages = await memory.search(scope, "sunset pier", { budget: { images: 0 } });
    assert.equal(
      noImages.items[0]?.imagesAsText[0]?.caption,
      "a sunset over the lake pier",
      "captions need no image budget",
    );
    const node = await memory.getRawNode(scope, item.rawNodeId);
    assert.equal(node.images[0]?.hash, null);
  });

  it("never exceeds the budget and says what it cut", async (t) => {
    const { memory } = await openWithHistory(t);
    const pack = await memory.search(scope, "kayak", { budget: { rawNodes: 2, images: 1, textTokens: 1_000 } });
    assert.ok(pack.items.length <= 2);
    assert.ok(pack.items.flatMap((item) => item.images).length <= 1);
    assert.ok(pack.budget.cut.rawNodes > 0, "four kayak turns do not fit in two raw nodes");
    assert.ok(pack.budget.cutItems.every((cut) => !pack.items.some((item) => item.rawNodeId === cut.rawNodeId)));
    assert.match(pack.warnings.join("\n"), /budget cut/);
    const tight = await memory.search(scope, "kayak", { budget: { textTokens: 5 } });
    assert.ok(tight.budget.used.textTokens <= 5);
    assert.ok(tight.budget.cut.textTokens > 0);
  });

  it("filters by session, speaker and time in every channel", async (t) => {
    const { memory } = await openWithHistory(t);
    const sessions = (await memory.search(scope, "kayak", { filters: { sessions: ["june"] } })).items;
    assert.ok(sessions.length > 0 && sessions.every((item) => item.provenance.sessionKey === "june"));
    const speakers = (await memory.search(scope, "kayak", { filters: { speakers: ["Ben"] } })).items;
    assert.ok(speakers.length > 0 && speakers.every((item) => item.provenance.speaker === "Ben"));
    const before = (await memory.search(scope, "kayak", { filters: { to: "2024-05-15T00:00:00Z" } })).items;
    assert.ok(before.length > 0 && before.every((item) => item.provenance.sessionKey === "may"));
  });

  it("finds an image by an image query, and returns its original bytes and thumbnail", async (t) => {
    const { memory, dir } = await openWithHistory(t);
    const query = await drawPng({ shape: "stripes", color: "#080" });
    const pack = await memory.search(scope, { image: { data: query } });
    const hit = pack.items[0];
    assert.ok(hit?.channels.imageVector);
    assert.equal(hit.provenance.sessionKey, "june");
    const image = hit.images[0];
    assert.ok(image);
    const original = await memory.getBlob(scope, image.hash);
    assert.deepEqual(
      Buffer.from(original.data),
      await import("node:fs").then((fs) => fs.readFileSync(join(dir, "towel.png"))),
    );
    const thumbnail = await memory.getBlob(scope, image.hash, { thumbnail: true });
    assert.equal(thumbnail.mediaType, "image/webp");
  });

  it("restricts retrieval to the channels asked for", async (t) => {
    const { memory } = await openWithHistory(t);
    const lexical = await memory.search(scope, "kayak rental", { channels: ["bm25"] });
    assert.deepEqual(lexical.channelsUsed, ["bm25"]);
    assert.ok(lexical.items.every((item) => Object.keys(item.channels).join() === "bm25"));
    const images = await memory.search(scope, "orange kayak", { channels: ["image"] });
    assert.ok(images.items.length > 0 && images.items.every((item) => item.channels.image));
  });

  it("hands images as text to a reader without vision, charged to text tokens instead of images", async (t) => {
    const { memory } = await openWithHistory(t);
    const seeing = await memory.search(scope, "orange kayak", { channels: ["image"] });
    const blind = await memory.search(scope, "orange kayak", { channels: ["image"], vision: false });
    assert.equal(blind.budget.used.images, 0);
    assert.ok(seeing.budget.used.images > 0);
    const kayak = blind.items.find((item) => item.provenance.sessionKey === "may" && item.provenance.turn === 0);
    const kayakSeen = seeing.items.find((item) => item.rawNodeId === kayak?.rawNodeId);
    assert.ok(kayak && kayakSeen);
    assert.deepEqual(kayak.images, []);
    assert.equal(kayak.imagesAsText[0]?.caption, "orange kayak");
    assert.ok(kayak.textTokens > kayakSeen.textTokens, "the caption costs text tokens");
  });

  it("rejects an empty query and a malformed budget with typed errors", async (t) => {
    const { memory } = await openWithHistory(t);
    await assert.rejects(
      memory.search(scope, "   "),
      (error) => error instanceof InputError && error.field === "query",
    );
    await assert.rejects(
      memory.search(scope, "kayak", { budget: { rawNodes: -1 } }),
      (error) => error instanceof InputError && error.field === "budget.rawNodes",
    );
    await assert.rejects(
      memory.search(scope, "kayak", { filters: { from: "yesterday" } }),
      (error) => error instanceof InputError && error.field === "filters.from",
    );
  });

  it("stores, finds and counts a turn that quotes a model's special tokens as plain text", async (t) => {
    const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels() });
    t.after(() => memory.close());
    const text = "The prompt ended with <|endoftext|> and then <|im_start|>assistant, which broke the parser.";
    await memory.remember(scope, text);
    const pack = await memory.search(scope, "parser broke endoftext");
    assert.equal(pack.items[0]?.text, text);
    // Counted as the characters an API would tokenize, not refused as a control token.
    assert.ok(
      pack.budget.used.textTokens >= countTokens(text) && countTokens(text) > 20,
      JSON.stringify(pack.budget.used),
    );
  });
});
