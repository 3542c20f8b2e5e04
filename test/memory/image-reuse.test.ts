import assert from "node:assert/strict";
import { join } from "node:path";
import { it } from "node:test";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import type { Models } from "../../src/models/provider.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";

it("an image already stored is neither read nor embedded again, and keeps its derived text and vector", async (t) => {
  const dir = tempDir(t);
  writeFile(dir, "sign.png", await drawPng({ shape: "square", label: "EXIT" }));
  const base = createHashModels();
  const calls = { read: 0, embed: 0 };
  const image = base.image;
  assert.ok(image);
  const models: Models = {
    ...base,
    image: {
      ...image,
      embedImages: (images) => {
        calls.embed += images.length;
        return image.embedImages(images);
      },
    },
    imageReaders: [
      {
        id: "fake-ocr",
        provider: "test",
        produces: "ocr",
        readImage: async () => {
          calls.read += 1;
          return "EXIT sign";
        },
      },
    ],
  };
  const memory = await Memory.open({ path: join(dir, "store"), models });
  t.after(() => memory.close());
  const scope = { tenant: "t", user: "u" };
  const turn = { text: "the door", images: [{ path: "sign.png" }] };
  await memory.addSession(scope, { session: "a", time: "2024-01-01T00:00:00Z", turns: [turn] }, { baseDir: dir });
  await memory.addSession(scope, { session: "b", time: "2024-01-02T00:00:00Z", turns: [turn] }, { baseDir: dir });
  assert.deepEqual(calls, { read: 1, embed: 1 });
  const pack = await memory.search(scope, { image: { data: await drawPng({ shape: "square", label: "EXIT" }) } });
  assert.equal(pack.items.length, 2, "both raw nodes carry the image vector");
  for (const item of pack.items) assert.equal(item.images[0]?.derivedText, "EXIT sign");
});

it("readImages: false skips the image readers on every write path (addSession, addSessions, appendTurns)", async (t) => {
  const dir = tempDir(t);
  writeFile(dir, "sign.png", await drawPng({ shape: "square", label: "EXIT" }));
  writeFile(dir, "map.png", await drawPng({ shape: "circle", label: "MAP" }));
  writeFile(dir, "menu.png", await drawPng({ shape: "square", label: "MENU" }));
  const base = createHashModels();
  let reads = 0;
  const models: Models = {
    ...base,
    imageReaders: [
      {
        id: "fake-ocr",
        provider: "test",
        produces: "ocr",
        readImage: async () => {
          reads += 1;
          return "read text";
        },
      },
    ],
  };
  const memory = await Memory.open({ path: join(dir, "store"), models });
  t.after(() => memory.close());
  const scope = { tenant: "t", user: "u" };
  const session = (key: string, path: string) => ({
    session: key,
    time: "2024-01-01T00:00:00Z",
    turns: [{ text: "look", images: [{ path }] }],
  });
  const quiet = { baseDir: dir, readImages: false };
  await memory.addSession(scope, session("a", "sign.png"), quiet);
  await memory.addSessions(scope, [session("b", "map.png")], quiet);
  await memory.appendTurns(scope, "a", { turns: [{ text: "and this", images: [{ path: "menu.png" }] }] }, quiet);
  assert.equal(reads, 0, "no reader ran");
  const pack = await memory.search(scope, { text: "look" });
  for (const item of pack.items) for (const image of item.images) assert.equal(image.derivedText ?? null, null);
  // The same append with the readers on does read its new image.
  await memory.appendTurns(
    scope,
    "b",
    { turns: [{ text: "again", images: [{ path: "menu.png" }] }] },
    { baseDir: dir },
  );
  assert.equal(reads, 1);
});
