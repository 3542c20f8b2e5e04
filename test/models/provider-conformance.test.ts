/**
 * The provider conformance suite against every profile: `hash`, `local` (real offline models, skipped with
 * the reason when they cannot load here) and `openai` (against the in-process fake server).
 */
import { after } from "node:test";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { createLocalModels } from "../../src/models/local-provider.ts";
import { createOpenAIModels } from "../../src/models/openai-provider.ts";
import type { Models } from "../../src/models/provider.ts";
import { drawPng } from "../support/fixtures.ts";
import { startFakeOpenAIServer } from "./fake-openai-server.ts";
import { runProviderConformance } from "./provider-conformance.ts";

runProviderConformance("hash", {
  open: async () => createHashModels({ dimensions: 64 }),
  skip: {
    "reports its own failures as a ProviderError":
      "a pure function of its input: nothing but a programming error can make it fail",
    "fails calls after close() with a ProviderError":
      "holds no resources: close() is a no-op and embedding stays usable",
  },
});

/** Loads the local models once; if they cannot load here, the reason becomes the suite's skip reason. */
async function probeLocalModels(): Promise<{ models: Models } | { unavailable: string }> {
  const models = await createLocalModels({ ocr: false });
  try {
    const image = new Uint8Array(await drawPng({ size: 32 }));
    await Promise.all([models.text.embed(["probe"]), models.image?.embedImages([image])]);
    return { models };
  } catch (error) {
    await models.close();
    return { unavailable: `the local models cannot load here: ${error instanceof Error ? error.message : error}` };
  }
}

const local = await probeLocalModels();
let probed = "models" in local ? local.models : undefined;

runProviderConformance("local", {
  // The probe already paid for loading the models; the suite's shared set reuses them.
  open: async () => {
    const models = probed ?? (await createLocalModels({ ocr: false }));
    probed = undefined;
    return models;
  },
  provokeFailure: async (models) => models.image?.embedImages([Uint8Array.of(1, 2, 3)]),
  ...("unavailable" in local ? { unavailable: local.unavailable } : {}),
});

const server = await startFakeOpenAIServer({ embeddings: "by-content" });
after(() => server.close());

runProviderConformance("openai", {
  open: async () =>
    createOpenAIModels({
      baseUrl: server.url,
      textModel: "text-embedding-3-small",
      textDimensions: 8,
      imageModel: "TIGER-Lab/VLM2Vec-Full",
      // Small batches and two in flight, so batch boundaries and parallel requests are exercised cheaply.
      maxBatchSize: 4,
      maxParallelCalls: 2,
    }),
  provokeFailure: async (models) => {
    server.failNext("/embeddings", "bad-request");
    return models.text.embed(["rejected"]);
  },
  skip: {
    "gives the same text the same vector":
      "a remote model does not promise bit-identical vectors across calls (batched GPU sums round differently); the fake server would pass without proving anything",
    "gives the same image the same vector": "as for text: no promise of bit-identical vectors from a remote model",
  },
});
