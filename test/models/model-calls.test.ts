/**
 * model-calls.ts against a scripted fake embedder: batching, the parallelism cap, retries and order.
 * The sleep is injected, so backoff is recorded rather than waited for.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ProviderError } from "../../src/core/errors.ts";
import {
  checkBatchSize,
  embedImages,
  embedTexts,
  retryDelayMs,
  type Sleep,
  withRetries,
} from "../../src/models/model-calls.ts";
import type { ImageEmbedder, TextEmbedder } from "../../src/models/provider.ts";
import { RetryableProviderError } from "../../src/models/retryable-provider-error.ts";

interface FakeOptions {
  maxBatchSize?: number;
  maxParallelCalls?: number;
  maxRetries?: number;
  /** Scripted answer for call number `call` (0-based); the default answers one vector per text. */
  answer?: (batch: readonly string[], call: number) => Promise<Float32Array[]>;
}

interface FakeTextEmbedder extends TextEmbedder {
  /** Every batch the fake was called with, in call order. */
  readonly batches: string[][];
  /** Most calls that were in flight at the same time. */
  readonly peakInFlight: () => number;
}

/** A one-dimensional "vector" that names its text, so order is checkable: `t7` → [7]. */
function vectorOf(text: string): Float32Array {
  return Float32Array.of(Number(text.replace(/\D/g, "")));
}

function fakeTextEmbedder(options: FakeOptions = {}): FakeTextEmbedder {
  const batches: string[][] = [];
  let inFlight = 0;
  let peak = 0;
  const answer = options.answer ?? (async (batch: readonly string[]) => batch.map(vectorOf));
  return {
    id: "fake-text",
    provider: "fake",
    dimensions: 1,
    maxBatchSize: options.maxBatchSize ?? 4,
    maxParallelCalls: options.maxParallelCalls ?? 1,
    ...(options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries }),
    batches,
    peakInFlight: () => peak,
    async embed(texts) {
      const call = batches.push([...texts]) - 1;
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      try {
        // Yield first, so calls the core started together really overlap.
        await new Promise((resolve) => setImmediate(resolve));
        return await answer(texts, call);
      } finally {
        inFlight -= 1;
      }
    },
  };
}

function texts(count: number): string[] {
  return Array.from({ length: count }, (_, index) => `t${index}`);
}

/** A sleep that records what it was asked to wait and returns at once. */
function recordingSleep(): { sleep: Sleep; waits: number[] } {
  const waits: number[] = [];
  return { waits, sleep: async (ms) => void waits.push(ms) };
}

function retryable(message: string, retryAfterMs?: number): RetryableProviderError {
  return new RetryableProviderError("fake", "fake-text", message, retryAfterMs === undefined ? {} : { retryAfterMs });
}

function values(vectors: readonly (Float32Array | undefined)[]): (number | undefined)[] {
  return vectors.map((vector) => vector?.[0]);
}

describe("model calls: batching and order", () => {
  it("splits inputs into batches of maxBatchSize and keeps input order", async () => {
    const embedder = fakeTextEmbedder({ maxBatchSize: 3 });
    const vectors = await embedTexts(embedder, texts(10));
    assert.deepEqual(
      embedder.batches.map((batch) => batch.length),
      [3, 3, 3, 1],
    );
    assert.deepEqual(values(vectors), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it("skips empty strings, which get no vector, and makes no call for nothing", async () => {
    const embedder = fakeTextEmbedder({ maxBatchSize: 2 });
    const vectors = await embedTexts(embedder, ["", "t1", "", "t3", "t4", ""]);
    assert.deepEqual(embedder.batches, [["t1", "t3"], ["t4"]]);
    assert.deepEqual(values(vectors), [undefined, 1, undefined, 3, 4, undefined]);
    assert.equal(vectors.length, 6);

    const idle = fakeTextEmbedder();
    assert.deepEqual(await embedTexts(idle, []), []);
    assert.deepEqual(await embedTexts(idle, ["", ""]), [undefined, undefined]);
    assert.deepEqual(idle.batches, []);
  });

  it("keeps input order when parallel batches finish out of order", async () => {
    // Earlier batches answer later: batch 0 waits longest.
    const embedder = fakeTextEmbedder({
      maxBatchSize: 2,
      maxParallelCalls: 3,
      answer: async (batch, call) => {
        await new Promise((resolve) => setTimeout(resolve, (5 - call) * 3));
        return batch.map(vectorOf);
      },
    });
    const vectors = await embedTexts(embedder, texts(9));
    assert.deepEqual(values(vectors), [0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it("embeds images through the same path", async () => {
    const calls: number[] = [];
    const embedder: ImageEmbedder = {
      id: "fake-image",
      provider: "fake",
      dimensions: 1,
      maxBatchSize: 2,
      maxParallelCalls: 2,
      async embedImages(images) {
        calls.push(images.length);
        return images.map((image) => Float32Array.of(image[0] ?? -1));
      },
    };
    const images = [1, 2, 3, 4, 5].map((value) => Uint8Array.of(value));
    assert.deepEqual(values(await embedImages(embedder, images)), [1, 2, 3, 4, 5]);
    assert.deepEqual(calls, [2, 2, 1]);
    assert.deepEqual(await embedImages(embedder, []), []);
  });

  it("rejects an answer with the wrong number of vectors as a ProviderError", async () => {
    const embedder = fakeTextEmbedder({ answer: async () => [Float32Array.of(1)] });
    await assert.rejects(embedTexts(embedder, ["t1", "t2"]), (error: unknown) => {
      assert.ok(error instanceof ProviderError);
      assert.equal(error.provider, "fake");
      assert.match(error.message, /expected 2 vectors, got 1/);
      return true;
    });
  });

  it("rejects limits that cannot be honoured", async () => {
    for (const limits of [{ maxBatchSize: 0 }, { maxParallelCalls: 1.5 }, { maxRetries: -1 }]) {
      const embedder = { ...fakeTextEmbedder(), ...limits };
      await assert.rejects(embedTexts(embedder, ["t1"]), ProviderError, JSON.stringify(limits));
    }
  });

  it("checkBatchSize lets providers refuse a call over their declared limit", () => {
    const embedder = fakeTextEmbedder({ maxBatchSize: 2 });
    checkBatchSize(embedder, 2);
    assert.throws(
      () => checkBatchSize(embedder, 3),
      (error: unknown) => {
        assert.ok(error instanceof ProviderError);
        assert.match(error.message, /3 inputs in one call, but maxBatchSize is 2/);
        return true;
      },
    );
  });
});

describe("model calls: parallelism", () => {
  it("never has more than maxParallelCalls calls in flight", async () => {
    for (const maxParallelCalls of [1, 2, 3]) {
      const embedder = fakeTextEmbedder({ maxBatchSize: 2, maxParallelCalls });
      await embedTexts(embedder, texts(15));
      assert.equal(embedder.batches.length, 8);
      assert.equal(embedder.peakInFlight(), maxParallelCalls, `maxParallelCalls ${maxParallelCalls}`);
    }
  });

  it("starts no new batch after one has failed", async () => {
    const embedder = fakeTextEmbedder({
      maxBatchSize: 1,
      answer: async (batch, call) => {
        if (call === 1) throw new ProviderError("fake", "fake-text", "bad input");
        return batch.map(vectorOf);
      },
    });
    await assert.rejects(embedTexts(embedder, texts(5)), /bad input/);
    assert.equal(embedder.batches.length, 2);
  });
});

describe("model calls: retries", () => {
  it("retries retryable failures with doubling backoff, then succeeds", async () => {
    const { sleep, waits } = recordingSleep();
    const embedder = fakeTextEmbedder({
      maxRetries: 3,
      answer: async (batch, call) => {
        if (call < 3) throw retryable(`HTTP 500 #${call}`);
        return batch.map(vectorOf);
      },
    });
    assert.deepEqual(values(await embedTexts(embedder, ["t7"], { sleep })), [7]);
    assert.equal(embedder.batches.length, 4);
    assert.deepEqual(waits, [250, 500, 1_000]);
  });

  it("gives up after maxRetries and throws the last failure", async () => {
    const { sleep, waits } = recordingSleep();
    const embedder = fakeTextEmbedder({
      maxRetries: 1,
      answer: async (_batch, call) => {
        throw retryable(`HTTP 503 #${call}`);
      },
    });
    await assert.rejects(embedTexts(embedder, ["t1"], { sleep }), /HTTP 503 #1/);
    assert.equal(embedder.batches.length, 2);
    assert.deepEqual(waits, [250]);
  });

  it("uses two retries when the embedder declares none", async () => {
    const { sleep } = recordingSleep();
    const embedder = fakeTextEmbedder({
      answer: async () => {
        throw retryable("HTTP 500");
      },
    });
    await assert.rejects(embedTexts(embedder, ["t1"], { sleep }), RetryableProviderError);
    assert.equal(embedder.batches.length, 3);
  });

  it("waits what the server asked for, capped at 4 s, and caps backoff too", async () => {
    const { sleep, waits } = recordingSleep();
    const answers = [retryable("HTTP 429", 1_500), retryable("HTTP 429", 60_000), retryable("HTTP 429", 0)];
    const embedder = fakeTextEmbedder({
      maxRetries: 3,
      answer: async (batch, call) => {
        const failure = answers[call];
        if (failure) throw failure;
        return batch.map(vectorOf);
      },
    });
    await embedTexts(embedder, ["t1"], { sleep });
    assert.deepEqual(waits, [1_500, 4_000, 0]);
    assert.equal(retryDelayMs(retryable("HTTP 500"), 10), 4_000);
  });

  it("does not retry a failure that is not retryable", async () => {
    const { sleep, waits } = recordingSleep();
    for (const failure of [new ProviderError("fake", "fake-text", "HTTP 400"), new TypeError("a bug")]) {
      const embedder = fakeTextEmbedder({
        maxRetries: 5,
        answer: async () => {
          throw failure;
        },
      });
      await assert.rejects(embedTexts(embedder, ["t1"], { sleep }), (error) => error === failure);
      assert.equal(embedder.batches.length, 1);
    }
    assert.deepEqual(waits, []);
  });

  it("retries only the batch that failed, keeping order", async () => {
    const { sleep } = recordingSleep();
    const embedder = fakeTextEmbedder({
      maxBatchSize: 2,
      maxParallelCalls: 2,
      answer: async (batch, call) => {
        if (call === 1) throw retryable("HTTP 502");
        return batch.map(vectorOf);
      },
    });
    const vectors = await embedTexts(embedder, texts(6), { sleep });
    assert.deepEqual(values(vectors), [0, 1, 2, 3, 4, 5]);
    assert.equal(embedder.batches.length, 4);
    assert.equal(embedder.batches.filter((batch) => batch[0] === "t2").length, 2);
  });

  it("stops waiting when the signal aborts and throws the failure it was waiting to retry", async () => {
    const controller = new AbortController();
    let attempts = 0;
    const attempt = async (): Promise<string> => {
      attempts += 1;
      throw retryable("HTTP 500");
    };
    const sleep: Sleep = async () => controller.abort();
    await assert.rejects(withRetries(attempt, { maxRetries: 3, sleep, signal: controller.signal }), /HTTP 500/);
    assert.equal(attempts, 1);
  });

  it("waits for real by default", async () => {
    let attempts = 0;
    const started = performance.now();
    const answer = await withRetries(
      async () => {
        attempts += 1;
        if (attempts === 1) throw retryable("HTTP 429", 20);
        return "ok";
      },
      { maxRetries: 1 },
    );
    assert.equal(answer, "ok");
    assert.ok(performance.now() - started >= 15, "waited the requested 20 ms");
  });
});
