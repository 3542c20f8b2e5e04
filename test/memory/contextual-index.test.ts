import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Memory, type MemoryOptions } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { plainIndexTextConfig } from "../../src/store/index-text.ts";
import { tempDir } from "../support/fixtures.ts";

const scope = { tenant: "acme", user: "ana" };

async function openWith(t: { after: (fn: () => void | Promise<void>) => void }, options: Partial<MemoryOptions>) {
  const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels(), ...options });
  t.after(() => memory.close());
  await memory.addSession(scope, {
    session: "s1",
    time: "2023-05-08T13:56:00Z",
    turns: [
      { speaker: "Bo", text: "Did you make it to the Pride parade on Sunday?" },
      { speaker: "Ana", text: "Yes, last week! It was so much fun." },
      { speaker: "Bo", text: "My cat knocked a plant over this morning." },
      { speaker: "Ana", text: "Cats will be cats." },
    ],
  });
  return memory;
}

describe("contextual index text", () => {
  it("finds an answer by who said it and what it answered, and hands back the turn as it was said", async (t) => {
    const memory = await openWith(t, {});
    const pack = await memory.search(scope, "Did Ana go to the Pride parade?", {
      mode: "tri-path",
      channels: ["bm25"],
    });
    const texts = pack.items.map((item) => item.text);
    assert.ok(texts.includes("Yes, last week! It was so much fun."), texts.join(" / "));
    for (const item of pack.items) assert.doesNotMatch(item.text, /\|/, "evidence is never the index text");
  });

  it("switched off, the answer that never names the parade is not found by the parade", async (t) => {
    const memory = await openWith(t, { indexText: plainIndexTextConfig });
    const pack = await memory.search(scope, "Pride parade", { mode: "tri-path", channels: ["bm25"] });
    assert.deepEqual(
      pack.items.map((item) => item.text),
      ["Did you make it to the Pride parade on Sunday?"],
    );
  });
});
