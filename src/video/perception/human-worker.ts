/**
 * Worker thread hosting `@vladmandic/human` on the tfjs WASM backend: face boxes with 1024-d
 * descriptors (BlazeFace + FaceRes) and COCO objects (CenterNet). Its own thread because WASM
 * inference blocks for hundreds of milliseconds per frame and because its tfjs must not meet the
 * text model's bundled tfjs (DESIGN §5). Model files are read from the package folder: Node 20's
 * fetch refuses file:// URLs, so the worker answers those itself.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parentPort } from "node:worker_threads";
import { loadLocalModels } from "../../models/local-models-addon.ts";

export interface HumanFrame {
  readonly width: number;
  readonly height: number;
  readonly rgb: Uint8Array;
}

export interface HumanFace {
  readonly box: readonly [number, number, number, number];
  readonly score: number;
  readonly descriptor: Float32Array;
}

export interface HumanObject {
  readonly label: string;
  readonly score: number;
  readonly box: readonly [number, number, number, number];
}

export interface HumanResult {
  readonly faces: readonly HumanFace[];
  readonly objects: readonly HumanObject[];
}

export type HumanRequest = { id: number; frames: HumanFrame[] };
export type HumanResponse =
  | { id: number; ok: true; results: HumanResult[] }
  | { id: number; ok: false; message: string };

interface HumanLike {
  load(): Promise<void>;
  detect(input: unknown): Promise<{
    face: { box: number[]; score: number; embedding?: number[] }[];
    object: { label: string; score: number; box: number[] }[];
  }>;
  tf: { tensor4d(values: Int32Array, shape: number[], dtype: string): { dispose(): void } };
}

let human: Promise<HumanLike> | undefined;

function loadHuman(): Promise<HumanLike> {
  human ??= (async () => {
    // Human and its tfjs WASM binaries come with the local models add-on, found from its folder.
    const addon = await loadLocalModels("local video perception");
    const humanDir = addon.packageDir("@vladmandic/human");
    const wasmDir = join(addon.packageDir("@tensorflow/tfjs-backend-wasm"), "dist");
    const networkFetch = globalThis.fetch;
    globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      if (!url.startsWith("file://")) return networkFetch(input, init);
      const data = await readFile(fileURLToPath(url));
      return new Response(data, {
        status: 200,
        headers: { "content-type": url.endsWith(".json") ? "application/json" : "application/octet-stream" },
      });
    }) as typeof fetch;
    const module = addon.requireFrom(join(humanDir, "dist", "human.node-wasm.js")) as {
      Human: new (config: unknown) => HumanLike;
    };
    const instance = new module.Human({
      backend: "wasm",
      wasmPath: `${wasmDir}/`,
      modelBasePath: `${pathToFileURL(join(humanDir, "models")).href}/`,
      debug: false,
      async: true,
      cacheSensitivity: 0,
      face: {
        enabled: true,
        detector: { rotation: false, maxDetected: 12, minConfidence: 0.3, return: false },
        mesh: { enabled: false },
        iris: { enabled: false },
        attention: { enabled: false },
        description: { enabled: true },
        emotion: { enabled: false },
        antispoof: { enabled: false },
        liveness: { enabled: false },
      },
      body: { enabled: false },
      hand: { enabled: false },
      gesture: { enabled: false },
      segmentation: { enabled: false },
      object: { enabled: true, minConfidence: 0.3, maxDetected: 20 },
    });
    await instance.load();
    return instance;
  })();
  return human;
}

async function detect(frame: HumanFrame): Promise<HumanResult> {
  const instance = await loadHuman();
  const values = new Int32Array(frame.rgb.length);
  values.set(frame.rgb);
  const tensor = instance.tf.tensor4d(values, [1, frame.height, frame.width, 3], "int32");
  try {
    const result = await instance.detect(tensor);
    return {
      faces: result.face
        .filter((face) => face.embedding && face.embedding.length > 0)
        .map((face) => ({
          box: box(face.box),
          score: face.score,
          descriptor: Float32Array.from(face.embedding ?? []),
        })),
      objects: result.object.map((object) => ({ label: object.label, score: object.score, box: box(object.box) })),
    };
  } finally {
    tensor.dispose();
  }
}

function box(values: number[]): [number, number, number, number] {
  return [values[0] ?? 0, values[1] ?? 0, values[2] ?? 0, values[3] ?? 0];
}

parentPort?.on("message", async (request: HumanRequest) => {
  try {
    const results: HumanResult[] = [];
    for (const frame of request.frames) results.push(await detect(frame));
    parentPort?.postMessage({ id: request.id, ok: true, results } satisfies HumanResponse);
  } catch (error) {
    parentPort?.postMessage({
      id: request.id,
      ok: false,
      message: error instanceof Error ? error.message : String(error),
    } satisfies HumanResponse);
  }
});
