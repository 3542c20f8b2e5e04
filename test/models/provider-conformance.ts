import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ProviderError } from "../../src/core/errors.ts";
import { checkBatchSize, embedImages, embedTexts } from "../../src/models/model-calls.ts";
import type { CallLimits, ImageEmbedder, Models, TextEmbedder } from "../../src/models/provider.ts";
import { drawPng } from "../support/fixtures.ts";

/**
 * One conformance suite for the model seam, written against `Models` and model-calls.ts only, so every
 * provider (hash, local, OpenAI-compatible) answers the same questions the same way.
 *
 * @example
 * runProviderConformance("hash", {
 *   open: async () => createHashModels(),
 *   skip: { "fails calls after close() with a ProviderError": "holds no resources; close() is a no-op" },
 * });
 */
export interface ProviderSubject {
  /** A fresh set of models; the suite closes each one it opens. Called once for the shared set, once more to test close(). */
  open(): Promise<Models>;
  /** Makes one call fail the provider's own way (undecodable image, HTTP 400); the suite checks the error's type. */
  provokeFailure?(models: Models): Promise<unknown>;
  /** Case name → why this provider skips it. Every skip needs a reason. */
  readonly skip?: Readonly<Partial<Record<CaseName, string>>>;
  /** Why none of this can run here (e.g. models that cannot load); every case is skipped with it. */
  readonly unavailable?: string;
}

export const caseNames = [
  "declares its capabilities as data, consistently",
  "text vectors have the declared dimensions and unit length",
  "keeps text order across batch boundaries",
  "embeds empty input lists to nothing, and skips empty texts",
  "gives the same text the same vector",
  "image vectors have the declared dimensions and unit length",
  "keeps image order across batch boundaries",
  "gives the same image the same vector",
  "refuses a single call over maxBatchSize with a ProviderError",
  "reports its own failures as a ProviderError",
  "fails calls after close() with a ProviderError",
] as const;

export type CaseName = (typeof caseNames)[number];

type Case = (models: Models, subject: ProviderSubject) => Promise<void>;

/** Batched vectors must match single-call ones this closely (batched convolutions may round differently). */
const SAME_VECTOR = 0.999;

export function runProviderConformance(name: string, subject: ProviderSubject): void {
  describe(`provider conformance: ${name}`, { skip: subject.unavailable ?? false }, () => {
    let models: Models | undefined;
    before(async () => {
      models = await subject.open();
    });
    after(async () => {
      await models?.close();
    });
    for (const caseName of caseNames) {
      const skip = subject.skip?.[caseName];
      it(caseName, { skip: skip ?? false }, async () => {
        assert.ok(models, "models opened");
        await cases[caseName](models, subject);
      });
    }
  });
}

const cases: Record<CaseName, Case> = {
  "declares its capabilities as data, consistently": async (models) => {
    assert.ok(models.profile.length > 0, "profile is named");
    checkEmbedderDeclaration(models.text);
    if (models.image) checkEmbedderDeclaration(models.image);
    for (const reader of models.imageReaders) {
      assert.ok(reader.id.length > 0 && reader.provider.length > 0, "image reader is named");
      assert.ok(reader.produces === "ocr" || reader.produces === "caption", `produces ${reader.produces}`);
    }
    if (models.chat) assert.equal(typeof models.chat.supportsImages, "boolean");
  },

  "text vectors have the declared dimensions and unit length": async (models) => {
    const vectors = await models.text.embed(["a red bicycle leaning on a fence", "quarterly tax report"]);
    assert.equal(vectors.length, 2);
    for (const vector of vectors) assertUnit(vector, models.text.dimensions);
  },

  "keeps text order across batch boundaries": async (models) => {
    const texts = Array.from({ length: models.text.maxBatchSize + 2 }, (_, index) => sentence(index));
    const batched = await embedTexts(models.text, texts);
    assert.equal(batched.length, texts.length);
    await assertSameAsSingleCalls(batched, sampleIndexes(models.text), (index) => models.text.embed([sentence(index)]));
  },

  "embeds empty input lists to nothing, and skips empty texts": async (models) => {
    assert.deepEqual(await models.text.embed([]), []);
    assert.deepEqual(await embedTexts(models.text, []), []);
    const [before, skipped, after] = await embedTexts(models.text, ["the lake", "", "the kayak"]);
    assert.equal(skipped, undefined);
    assert.ok(before && after);
    if (models.image) {
      assert.deepEqual(await models.image.embedImages([]), []);
      assert.deepEqual(await embedImages(models.image, []), []);
    }
  },

  "gives the same text the same vector": async (models) => {
    const text = "she parked the car in the underground garage";
    const [first] = await models.text.embed([text]);
    const [second] = await models.text.embed(["something else first", text]).then((vectors) => vectors.slice(1));
    assert.deepEqual(first, second);
  },

  "image vectors have the declared dimensions and unit length": async (models) => {
    const image = imageEmbedder(models);
    const vectors = await embedImages(image, await Promise.all([picture(0), picture(1)]));
    assert.equal(vectors.length, 2);
    for (const vector of vectors) assertUnit(vector, image.dimensions);
  },

  "keeps image order across batch boundaries": async (models) => {
    const image = imageEmbedder(models);
    const count = image.maxBatchSize + 2;
    const pictures = await Promise.all(Array.from({ length: count }, (_, index) => picture(index)));
    const batched = await embedImages(image, pictures);
    assert.equal(batched.length, count);
    await assertSameAsSingleCalls(batched, sampleIndexes(image), async (index) =>
      image.embedImages([await picture(index)]),
    );
  },

  "gives the same image the same vector": async (models) => {
    const image = imageEmbedder(models);
    const bytes = await picture(3);
    const [first] = await image.embedImages([bytes]);
    const [second] = await image.embedImages([bytes]);
    assert.deepEqual(first, second);
  },

  "refuses a single call over maxBatchSize with a ProviderError": async (models) => {
    const texts = Array.from({ length: models.text.maxBatchSize + 1 }, (_, index) => sentence(index));
    await assertProviderError(models.text.embed(texts), models.text);
    if (models.image) {
      const bytes = await picture(0);
      const images = Array.from({ length: models.image.maxBatchSize + 1 }, () => bytes);
      await assertProviderError(models.image.embedImages(images), models.image);
    }
  },

  "reports its own failures as a ProviderError": async (models, subject) => {
    assert.ok(subject.provokeFailure, "give provokeFailure, or a skip reason for this case");
    const error = await subject.provokeFailure(models).then(
      () => assert.fail("provokeFailure should have failed"),
      (reason: unknown) => reason,
    );
    assert.ok(error instanceof ProviderError, `expected a ProviderError, got ${String(error)}`);
    assert.ok(error.provider.length > 0 && error.model.length > 0, "the error names provider and model");
  },

  "fails calls after close() with a ProviderError": async (_models, subject) => {
    const closed = await subject.open();
    await closed.close();
    await closed.close();
    await assertProviderError(closed.text.embed(["after close"]), closed.text);
    await assertProviderError(embedTexts(closed.text, ["after close"]), closed.text);
    if (closed.image) await assertProviderError(closed.image.embedImages([await picture(0)]), closed.image);
  },
};

function checkEmbedderDeclaration(embedder: TextEmbedder | ImageEmbedder): void {
  assert.ok(embedder.id.length > 0, "id is named");
  assert.ok(embedder.provider.length > 0, "provider is named");
  assertPositiveInteger(embedder.dimensions, "dimensions");
  assertPositiveInteger(embedder.maxBatchSize, "maxBatchSize");
  assertPositiveInteger(embedder.maxParallelCalls, "maxParallelCalls");
  if (embedder.maxRetries !== undefined) {
    assert.ok(Number.isInteger(embedder.maxRetries) && embedder.maxRetries >= 0, "maxRetries ≥ 0");
  }
  // The core's own check of the declaration agrees: a full batch is allowed, one more is not.
  checkBatchSize(embedder, embedder.maxBatchSize);
  assert.throws(() => checkBatchSize(embedder, embedder.maxBatchSize + 1), ProviderError);
}

function assertPositiveInteger(value: number, field: string): void {
  assert.ok(Number.isInteger(value) && value >= 1, `${field} ${value} is a positive integer`);
}

function imageEmbedder(models: Models): ImageEmbedder {
  assert.ok(models.image, "this provider has no image embedder: skip the image cases with that reason");
  return models.image;
}

/** Distinct sentences, so a vector that landed in the wrong slot is noticed. */
function sentence(index: number): string {
  const subjects = ["the kayak", "my grandmother", "a parking ticket", "the oven", "our beagle", "the invoice"];
  const verbs = ["drifted past", "was found near", "smelled like", "was painted beside", "rolled under"];
  const places = ["the lighthouse", "a bakery", "the old barn", "platform nine", "the lake shore", "a library"];
  return `${subjects[index % 6]} ${verbs[index % 5]} ${places[(index * 7) % 6]} on day ${index}`;
}

const colours = ["#d33", "#1a8", "#25c", "#e90", "#737", "#0bb", "#555", "#9c2"];
const shapes = ["circle", "square", "stripes"] as const;

/** Distinct, decodable PNGs: colour, shape and a printed number vary with `index`. */
function picture(index: number): Promise<Uint8Array> {
  return drawPng({
    color: colours[index % colours.length],
    shape: shapes[index % shapes.length],
    label: String(index),
    size: 64,
  }).then((buffer) => new Uint8Array(buffer));
}

/** First, last of the first batch, first of the second, last: where an off-by-one would show. */
function sampleIndexes(limits: CallLimits): number[] {
  // A set: with a batch size of 1 the first two coincide.
  return [...new Set([0, limits.maxBatchSize - 1, limits.maxBatchSize, limits.maxBatchSize + 1])];
}

/** Each sampled batched vector is closest to the single-call vector of its own input, and near-identical to it. */
async function assertSameAsSingleCalls(
  batched: readonly (Float32Array | undefined)[],
  indexes: readonly number[],
  single: (index: number) => Promise<Float32Array[]>,
): Promise<void> {
  const singles = await Promise.all(indexes.map(async (index) => (await single(index))[0]));
  for (const [position, index] of indexes.entries()) {
    const vector = batched[index];
    assert.ok(vector, `vector ${index}`);
    const similarities = singles.map((other) => (other ? dot(vector, other) : Number.NaN));
    const best = similarities.indexOf(Math.max(...similarities));
    assert.equal(
      best,
      position,
      `input ${index} is closest to its own single-call vector (${similarities.join(", ")})`,
    );
    assert.ok((similarities[position] ?? 0) > SAME_VECTOR, `input ${index} matches its single-call vector`);
  }
}

async function assertProviderError(promise: Promise<unknown>, embedder: TextEmbedder | ImageEmbedder): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ProviderError, `expected a ProviderError, got ${String(error)}`);
    assert.equal(error.provider, embedder.provider);
    assert.equal(error.model, embedder.id);
    return true;
  });
}

function assertUnit(vector: Float32Array | undefined, dimensions: number): void {
  assert.ok(vector instanceof Float32Array, "a Float32Array");
  assert.equal(vector.length, dimensions);
  assert.ok(Math.abs(Math.sqrt(dot(vector, vector)) - 1) < 1e-4, "unit length");
}

function dot(left: Float32Array, right: Float32Array): number {
  let sum = 0;
  for (let index = 0; index < left.length; index += 1) sum += (left[index] ?? 0) * (right[index] ?? 0);
  return sum;
}
