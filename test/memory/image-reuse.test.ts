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
