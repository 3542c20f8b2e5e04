import type { Worker } from "node:worker_threads";
import { ProviderError } from "../../core/errors.ts";
import { siblingModule, spawnModuleWorker } from "../../core/module-worker.ts";
import { loadLocalModels } from "../../models/local-models-addon.ts";
import type { Frame } from "../gateway.ts";
import type { Detector, FrameDetections } from "./detector.ts";
import type { HumanRequest, HumanResponse } from "./human-worker.ts";

const MODEL = "human-3.3.6-blazeface-faceres-centernet";

/**
 * Faces (BlazeFace boxes, FaceRes 1024-d descriptors) and COCO objects (CenterNet) from
 * `@vladmandic/human` on tfjs WASM, offline, in one lazily started worker thread.
 *
 * @example
 * const detector = createLocalDetector();
 * const [detections] = await detector.detect([frame]);
 * await detector.close();
 */
export function createLocalDetector(): Detector {
  let worker: Worker | undefined;
  let nextId = 1;
  const pending = new Map<number, { resolve(results: FrameDetections[]): void; reject(error: Error): void }>();
  const failAll = (message: string, cause?: unknown) => {
    for (const request of pending.values()) request.reject(new ProviderError("local", MODEL, message, { cause }));
    pending.clear();
  };
  const started = (): Worker => {
    if (worker) return worker;
    const spawned = spawnModuleWorker(siblingModule("human-worker", import.meta.url), undefined);
    spawned.unref();
    spawned.on("message", (response: HumanResponse) => {
      const request = pending.get(response.id);
      if (!request) return;
      pending.delete(response.id);
      if (pending.size === 0) spawned.unref();
      if (response.ok) request.resolve(response.results as FrameDetections[]);
      else request.reject(new ProviderError("local", MODEL, response.message));
    });
    spawned.on("error", (error) => failAll(`worker failed: ${error.message}`, error));
    spawned.on("exit", (code) => {
      if (worker === spawned) worker = undefined;
      failAll(`worker exited with code ${code}`);
    });
    worker = spawned;
    return spawned;
  };
  return {
    id: MODEL,
    async detect(frames: readonly Frame[]): Promise<FrameDetections[]> {
      if (frames.length === 0) return [];
      // Without the add-on that holds human, a ConfigError saying what to install (not a worker failure).
      await loadLocalModels("local video perception");
      const target = started();
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        target.ref();
        const request: HumanRequest = {
          id,
          frames: frames.map((frame) => ({ width: frame.width, height: frame.height, rgb: frame.rgb })),
        };
        target.postMessage(request);
      });
    },
    async close() {
      const current = worker;
      worker = undefined;
      failAll("detector closed");
      await current?.terminate();
    },
  };
}
