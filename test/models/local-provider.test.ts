/**
 * The `local` profile with its real, offline models. Loading and running them takes a few seconds,
 * so one set of models is shared by the whole file.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import sharp from "sharp";
import { ConfigError, ProviderError } from "../../src/core/errors.ts";
import { createLocalModels } from "../../src/models/local-provider.ts";
import { embedTexts } from "../../src/models/model-calls.ts";
import { createModels } from "../../src/models/profiles.ts";
import type { Models } from "../../src/models/provider.ts";

let models: Models;

before(async () => {
  models = await createLocalModels();
});

after(async () => {
  await models.close();
});

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[i] as number);
  return sum;
}

function assertUnit(vector: Float32Array, dimensions: number): void {
  assert.equal(vector.length, dimensions);
  assert.ok(Math.abs(Math.sqrt(dot(vector, vector)) - 1) < 1e-4, "unit length");
}

/** What a promise rejects with, or "resolved"; observing it at once keeps rejections handled. */
async function settle(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
    return "resolved";
  } catch (error) {
    return error;
  }
}

async function png(svg: string): Promise<Uint8Array> {
  return new Uint8Array(await sharp(Buffer.from(svg)).png().toBuffer());
}

function circle(cx: number, cy: number, r: number, background = "white"): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="240" height="200">
    <rect width="100%" height="100%" fill="${background}"/>
    <circle cx="${cx}" cy="${cy}" r="${r}" fill="#d01010"/></svg>`;
}

function stripes(): string {
  const bars = Array.from({ length: 10 }, (_, i) => `<rect x="${i * 24}" width="12" height="200" fill="#1030c0"/>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="240" height="200">
    <rect width="100%" height="100%" fill="#f0f0f0"/>${bars.join("")}</svg>`;
}

function words(text: string, width = 640): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="160">
    <rect width="100%" height="100%" fill="white"/>
    <text x="30" y="100" font-family="sans-serif" font-size="64" font-weight="bold" fill="black">${text}</text></svg>`;
}

describe("local text embedder (USE lite)", () => {
  it("ranks a paraphrase above unrelated sentences", async () => {
    const query = "my dog loves playing fetch in the park";
    const paraphrase = "our puppy enjoys chasing a ball on the grass at the park";
    const unrelated = [
      "the quarterly tax report is due next Tuesday",
      "she parked the car in the underground garage",
      "preheat the oven before baking the bread",
      "the stock market fell sharply this morning",
    ];
    const [q, ...candidates] = await models.text.embed([query, paraphrase, ...unrelated]);
    assert.ok(q);
    const scores = candidates.map((vector) => dot(q, vector));
    const best = scores.indexOf(Math.max(...scores));
    assert.equal(best, 0, `paraphrase should rank first, scores ${scores.map((s) => s.toFixed(3)).join(", ")}`);
  });

  it("returns deterministic unit vectors of 512 dimensions, in input order", async () => {
    assert.equal(models.text.id, "use-lite-512");
    assert.equal(models.text.dimensions, 512);
    const texts = ["a red bicycle leaning on a fence", "", "stock prices"];
    const first = await models.text.embed(texts);
    const second = await models.text.embed([...texts].reverse());
    assert.equal(first.length, 3);
    for (const vector of first) assertUnit(vector, 512);
    assert.deepEqual(first, second.reverse());
    assert.deepEqual(await models.text.embed([]), []);
  });

  it("accepts more texts than maxBatchSize", async () => {
    const texts = Array.from({ length: models.text.maxBatchSize + 3 }, (_, i) => `sentence number ${i}`);
    const vectors = await embedTexts(models.text, texts);
    assert.equal(vectors.length, texts.length);
    assert.deepEqual(vectors.at(-1), (await models.text.embed([texts.at(-1) as string]))[0]);
  });
});

describe("local image embedder (MobileNetV2)", () => {
  it("puts a near-duplicate closer than a different image", async () => {
    const image = models.image;
    assert.ok(image);
    assert.equal(image.id, "mobilenet-v2-1280");
    const [original, shifted, different] = await image.embedImages([
      await png(circle(120, 100, 60)),
      await png(circle(128, 104, 55)),
      await png(stripes()),
    ]);
    assert.ok(original && shifted && different);
    for (const vector of [original, shifted, different]) assertUnit(vector, 1280);
    const near = dot(original, shifted);
    const far = dot(original, different);
    assert.ok(near > far, `near-duplicate ${near.toFixed(3)} should beat different ${far.toFixed(3)}`);
  });

  it("is deterministic and handles greyscale and transparent images", async () => {
    const image = models.image;
    assert.ok(image);
    const bytes = await png(circle(120, 100, 60));
    const grey = new Uint8Array(await sharp(bytes).greyscale().png().toBuffer());
    const transparent = await png(circle(120, 100, 60, "none"));
    const [a, b, c, d] = await image.embedImages([bytes, bytes, grey, transparent]);
    assert.ok(a && b && c && d);
    assert.deepEqual(a, b);
    assertUnit(c, 1280);
    // Transparency is flattened onto white, so this is the same picture.
    assert.ok(dot(a, d) > 0.99, `flattened transparent image ${dot(a, d).toFixed(3)}`);
  });

  it("reports undecodable bytes as a ProviderError", async () => {
    const image = models.image;
    assert.ok(image);
    await assert.rejects(image.embedImages([new Uint8Array([1, 2, 3])]), (error: unknown) => {
      assert.ok(error instanceof ProviderError);
      assert.equal(error.provider, "local");
      assert.equal(error.model, "mobilenet-v2-1280");
      return true;
    });
  });
});

describe("local OCR (tesseract.js)", () => {
  it("reads large printed text", async () => {
    const [reader] = models.imageReaders;
    assert.ok(reader);
    assert.equal(reader.produces, "ocr");
    const text = await reader.readImage(await png(words("INVOICE 4821")));
    assert.match(text, /INVOICE/);
    assert.match(text, /4821/);
    assert.equal(text, text.trim());
  });

  it("returns an empty string when there is no text", async () => {
    const [reader] = models.imageReaders;
    assert.ok(reader);
    assert.equal(await reader.readImage(await png(stripes())), "");
  });

  it("reports undecodable bytes as a ProviderError", async () => {
    const [reader] = models.imageReaders;
    assert.ok(reader);
    await assert.rejects(reader.readImage(new Uint8Array([1, 2, 3])), ProviderError);
  });
});

describe("local models lifecycle", () => {
  it("leaves out what the options turn off", async () => {
    const textOnly = await createLocalModels({ ocr: false, imageFeatures: false });
    assert.equal(textOnly.profile, "local");
    assert.equal(textOnly.image, undefined);
    assert.deepEqual(textOnly.imageReaders, []);
    await textOnly.close();
  });

  it("shares texts among its text workers and gives the vectors one worker gives, whatever the split", async () => {
    const texts = Array.from(
      { length: 27 },
      (_, index) =>
        `Turn ${index}: ${["Ana locked the red bike", "Miso slept on the sofa", "The vet moved to May"][index % 3]}`,
    );
    const one = await createLocalModels({ ocr: false, imageFeatures: false, textWorkers: 1 });
    const two = await createLocalModels({ ocr: false, imageFeatures: false, textWorkers: 2 });
    try {
      assert.equal(one.text.maxParallelCalls, 1);
      assert.equal(two.text.maxParallelCalls, 2);
      const alone = await one.text.embed(texts);
      // One call shared by two idle workers, then two calls at once (each on its own worker).
      const shared = await two.text.embed(texts);
      const [first, second] = await Promise.all([two.text.embed(texts.slice(0, 13)), two.text.embed(texts.slice(13))]);
      for (const vectors of [shared, [...(first ?? []), ...(second ?? [])]]) {
        assert.equal(vectors.length, texts.length);
        // The same bits: each sentence is encoded on its own, by the same weights.
        for (const [index, vector] of vectors.entries()) assert.deepEqual(vector, alone[index], `text ${index}`);
      }
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it("refuses a text worker count that is not a whole number from 1 to 16, before loading anything", async () => {
    for (const textWorkers of [0, -1, 1.5, 17, Number.NaN]) {
      await assert.rejects(createLocalModels({ textWorkers }), ConfigError, String(textWorkers));
    }
    for (const value of ["two", "1.5", "-1", "0"]) {
      await assert.rejects(createModels("local", { CAIRN_LOCAL_TEXT_WORKERS: value }), ConfigError, value);
    }
    await assert.rejects(createModels("local", { CAIRN_LOCAL_TEXT_WORKERS: "two" }), /CAIRN_LOCAL_TEXT_WORKERS/);
  });

  it("rejects calls after close(), which is idempotent", async () => {
    const closed = await createLocalModels();
    await closed.close();
    await closed.close();
    const [reader] = closed.imageReaders;
    assert.ok(closed.image && reader);
    const bytes = await png(stripes());
    await assert.rejects(closed.text.embed(["hello"]), ProviderError);
    await assert.rejects(closed.image.embedImages([bytes]), ProviderError);
    await assert.rejects(reader.readImage(bytes), ProviderError);
  });

  it("fails requests still in flight when close() runs", async () => {
    const closing = await createLocalModels();
    const [reader] = closing.imageReaders;
    assert.ok(closing.image && reader);
    const bytes = await png(words("LATE"));
    const requests = [closing.text.embed(["hi"]), closing.image.embedImages([bytes]), reader.readImage(bytes)];
    const outcomes = requests.map(settle);
    // Let the image decodes finish so every request has reached its worker.
    await new Promise((resolve) => setTimeout(resolve, 50));
    await closing.close();
    for (const result of await Promise.all(outcomes)) assert.ok(result instanceof ProviderError, String(result));
  });

  it("lets the process exit once close() has run", { timeout: 60_000 }, async () => {
    // Every worker is started, then closed; the child must end by itself, without process.exit().
    // The script is a file rather than --eval: tesseract.js's worker inherits `--input-type`, which
    // Node rejects outside --eval.
    const provider = new URL("../../src/models/local-provider.ts", import.meta.url).href;
    const script = `
      import sharp from ${JSON.stringify(import.meta.resolve("sharp"))};
      import { createLocalModels } from ${JSON.stringify(provider)};
      const image = await sharp(Buffer.from(${JSON.stringify(words("HELLO"))})).png().toBuffer();
      const models = await createLocalModels();
      await models.text.embed(Array.from({ length: 12 }, (_, i) => "hello " + i)); // both text workers
      await models.image.embedImages([image]);
      const text = await models.imageReaders[0].readImage(image);
      await models.close();
      console.log("closed", text);
    `;
    const dir = await mkdtemp(join(tmpdir(), "cairn-local-"));
    try {
      const file = join(dir, "close.mjs");
      await writeFile(file, script);
      const { stdout } = await promisify(execFile)(process.execPath, ["--import", import.meta.resolve("tsx"), file], {
        timeout: 50_000,
      });
      assert.match(stdout, /closed HELLO/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
