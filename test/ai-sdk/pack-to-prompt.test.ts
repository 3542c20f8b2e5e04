import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ImagePart, TextPart } from "ai";
import sharp from "sharp";
import { type ImageTokenRule, imageTokens } from "../../src/context/image-tokens.ts";
import { InputError } from "../../src/core/errors.ts";
import { countTokens } from "../../src/core/tokens.ts";
import type { EvidencePack } from "../../src/evidence/evidence-pack.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { packToPrompt } from "../../src/surfaces/ai-sdk/pack-to-prompt.ts";
import { drawPng } from "../support/fixtures.ts";

const scope = { tenant: "acme", user: "ana" };

/** What the parts cost, counted again from the parts themselves: text by o200k, images from their decoded size. */
async function cost(content: readonly (TextPart | ImagePart)[], rule: ImageTokenRule = { kind: "openai-tile" }) {
  let text = 0;
  let images = 0;
  for (const part of content) {
    if (part.type === "text") text += countTokens(part.text);
    else {
      const { width, height } = await sharp(part.image as Uint8Array).metadata();
      images += imageTokens({ width: width ?? 0, height: height ?? 0 }, rule);
    }
  }
  return { text, images, total: text + images };
}

describe("packToPrompt", () => {
  let dir: string;
  let memory: Memory;
  let pack: EvidencePack;
  const originals = new Map<string, Buffer>();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairn-pack-prompt-"));
    memory = await Memory.open({ path: join(dir, "store"), models: createHashModels(), ownsModels: true });
    const large = await drawPng({ shape: "square", color: "#c22", size: 1024 });
    const small = await drawPng({ shape: "circle", color: "#22c", size: 96 });
    const notes: [string, Buffer[]][] = [
      ["Ana's bike is a red road bike with a 54 cm frame.", [large]],
      ["The bike shop on Trubarjeva fixed Ana's bike brakes.", [small]],
      ["Ana rides her bike to work on Tuesdays and Thursdays.", []],
      [`Ana's bike trip diary: ${"we rode along the river past the old mill and stopped for coffee. ".repeat(20)}`, []],
    ];
    for (const [text, images] of notes) {
      await memory.remember(scope, text, { images: images.map((data) => ({ data, caption: "Ana's bike" })) });
    }
    for (const data of [large, small]) {
      const hash = createHash("sha256").update(data).digest("hex");
      originals.set(hash, data);
    }
    pack = await memory.search(scope, "Ana bike");
    assert.equal(pack.items.length, 4, "the search finds every note");
    assert.equal(pack.items.flatMap((item) => item.images).length, 2);
  });
  after(async () => {
    await memory.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("with room for all: every item's text with provenance, then its original images, costed as Cairn counts", async () => {
    const prompt = await packToPrompt(memory, scope, pack, { tokenBudget: 100_000 });
    assert.deepEqual(prompt.warnings, []);
    assert.deepEqual(prompt.dropped, []);
    const texts = prompt.content.filter((part): part is TextPart => part.type === "text");
    assert.equal(texts.length, 1 + pack.items.length);
    for (const [index, item] of pack.items.entries()) {
      const text = texts[index + 1]?.text ?? "";
      assert.ok(text.startsWith(`[${index + 1}] ${item.provenance.time}`), text);
      assert.ok(text.includes(item.rawNodeId) && text.includes(item.provenance.sessionKey));
      assert.ok(text.includes(item.text));
      for (const image of item.images) assert.ok(text.includes(image.hash), "an image is named by its hash");
    }
    const images = prompt.content.filter((part): part is ImagePart => part.type === "image");
    assert.equal(images.length, 2);
    for (const image of images) {
      const bytes = Buffer.from(image.image as Uint8Array);
      assert.ok(
        [...originals.values()].some((original) => original.equals(bytes)),
        "an image part carries an original's bytes",
      );
      assert.equal(image.mediaType, "image/png");
    }
    // Each image follows the text of the item it belongs to.
    const firstWithImage = pack.items.findIndex((item) => item.images.length > 0);
    const position = prompt.content.indexOf(texts[firstWithImage + 1] as TextPart);
    assert.equal(prompt.content[position + 1]?.type, "image");
    assert.deepEqual(prompt.tokens, await cost(prompt.content));
  });

  it("never exceeds the budget, at any size, and accounts for every item it leaves out", async () => {
    const full = (await packToPrompt(memory, scope, pack, { tokenBudget: 100_000 })).tokens.total;
    for (let budget = 0; budget <= full + 10; budget += 37) {
      const prompt = await packToPrompt(memory, scope, pack, { tokenBudget: budget });
      const counted = await cost(prompt.content);
      assert.deepEqual(prompt.tokens, counted, `budget ${budget}`);
      assert.ok(counted.total <= budget, `budget ${budget}: parts cost ${counted.total}`);
      const texts = prompt.content.flatMap((part) => (part.type === "text" ? [part.text] : []));
      for (const item of pack.items) {
        const included = texts.some((text) => text.includes(`raw node ${item.rawNodeId}`));
        const dropped = prompt.dropped.some((entry) => entry.rawNodeId === item.rawNodeId && !entry.hash);
        assert.ok(included !== dropped, `budget ${budget}: ${item.rawNodeId} is either in or reported left out`);
      }
    }
  });

  it("leaves out a long item that does not fit but keeps a later one that does, and says so", async () => {
    const long = pack.items.find((item) => item.text.includes("trip diary"));
    assert.ok(long);
    const all = await packToPrompt(memory, scope, pack, { tokenBudget: 100_000, images: "none" });
    const prompt = await packToPrompt(memory, scope, pack, { tokenBudget: all.tokens.total - 10, images: "none" });
    assert.deepEqual(prompt.dropped, [{ rawNodeId: long.rawNodeId, tokens: prompt.dropped[0]?.tokens }]);
    assert.ok((prompt.dropped[0]?.tokens ?? 0) > 200);
    assert.match(prompt.warnings[0] ?? "", new RegExp(`left out raw node ${long.rawNodeId}`));
    const kept = prompt.content.filter((part) => part.type === "text").length - 1;
    assert.equal(kept, pack.items.length - 1, "the items after the long one still went in");
  });

  it("sends a thumbnail when the original does not fit, and names an image it leaves out", async () => {
    const largeItem = pack.items.find((item) => item.images[0]?.width === 1024);
    assert.ok(largeItem);
    const largeHash = largeItem.images[0]?.hash ?? "";
    const one = { ...pack, items: [largeItem] };
    const words = (await packToPrompt(memory, scope, one, { tokenBudget: 100_000, images: "none" })).tokens.total;
    // Room for a 256 px thumbnail (255 tokens), not the 1024 px original (765).
    const tight = await packToPrompt(memory, scope, one, { tokenBudget: words + 300 });
    const thumbnail = (await memory.getBlob(scope, largeHash, { thumbnail: true })).data;
    const [image, ...more] = tight.content.filter((part): part is ImagePart => part.type === "image");
    assert.equal(more.length, 0);
    assert.ok(Buffer.from(image?.image as Uint8Array).equals(Buffer.from(thumbnail)), "the thumbnail's bytes");
    assert.equal(image?.mediaType, "image/webp");
    assert.deepEqual(tight.tokens, { text: words, images: 255, total: words + 255 });
    assert.deepEqual(tight.dropped, []);
    assert.match(tight.warnings.join("\n"), new RegExp(`image ${largeHash} .*sent as its thumbnail`));

    const textOnly = await packToPrompt(memory, scope, one, { tokenBudget: words + 100 });
    assert.equal(textOnly.content.filter((part) => part.type === "image").length, 0);
    assert.deepEqual(textOnly.dropped, [{ rawNodeId: largeItem.rawNodeId, hash: largeHash, tokens: 765 }]);
    assert.match(textOnly.warnings.join("\n"), new RegExp(`left out image ${largeHash}`));
    assert.match(
      textOnly.content.map((part) => (part.type === "text" ? part.text : "")).join("\n"),
      new RegExp(`image ${largeHash}`),
      "the text still names the image, for cairn_get_image",
    );
  });

  it("costs images by the rule the caller names", async () => {
    const tile = await packToPrompt(memory, scope, pack, { tokenBudget: 100_000 });
    const patch = await packToPrompt(memory, scope, pack, { tokenBudget: 100_000, imageTokens: { kind: "patch" } });
    // 1024 px: 37 × 37 patches of 28 px; 96 px: 4 × 4. OpenAI's tiles: 765 and 255.
    assert.equal(patch.tokens.images, 37 * 37 + 4 * 4);
    assert.equal(tile.tokens.images, 765 + 255);
    assert.deepEqual(patch.tokens, await cost(patch.content, { kind: "patch" }));
  });

  it("says when memory holds nothing, and refuses a budget that is not a whole number of tokens", async () => {
    const empty = { ...pack, items: [] };
    const prompt = await packToPrompt(memory, scope, empty, { tokenBudget: 500 });
    assert.deepEqual(
      prompt.content.map((part) => part.type === "text" && part.text),
      ["Long-term memory holds no evidence for this query."],
    );
    for (const tokenBudget of [-1, 1.5, Number.NaN]) {
      await assert.rejects(packToPrompt(memory, scope, pack, { tokenBudget }), (error) => {
        assert.ok(error instanceof InputError);
        assert.equal(error.field, "tokenBudget");
        return true;
      });
    }
    const nothing = await packToPrompt(memory, scope, pack, { tokenBudget: 3 });
    assert.deepEqual(nothing.content, []);
    assert.equal(nothing.dropped.length, pack.items.length);
  });
});
