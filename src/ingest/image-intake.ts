import { createHash } from "node:crypto";
import { realpath } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import sharp from "sharp";
import { InputError } from "../core/errors.ts";
import type { IngestLimits } from "./limits.ts";
import { readRegularFile } from "./regular-file.ts";
import type { PixelImageInput } from "./session-input.ts";

export interface IntakeOptions {
  /** Folder image paths are relative to; a path may not leave it. Without it, paths are refused. */
  readonly baseDir?: string;
  /** Fetch `url` images. Off by default: a memory write should not reach the network unasked. */
  readonly allowRemoteImages?: boolean;
  readonly fetch?: typeof fetch;
  readonly limits: IngestLimits;
}

export interface AcceptedImage {
  readonly hash: string;
  readonly mediaType: string;
  readonly bytes: number;
  readonly width: number;
  readonly height: number;
  readonly data: Uint8Array;
  readonly thumbnail: Uint8Array;
  readonly origin: string | null;
}

const mediaTypes: Record<string, string> = {
  png: "image/png",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
};
/** Thumbnail edge in px (DESIGN: a 256 px WebP per blob): enough for a dashboard tile or a reader's preview. */
export const thumbnailSize = 256;
/** WebP quality of thumbnails: a preview, not a copy, so small files; set in af873f5, not measured. */
const thumbnailQuality = 75;

/** Loads, validates and fingerprints one image. Nothing is written anywhere. */
export async function intakeImage(
  image: PixelImageInput,
  field: string,
  options: IntakeOptions,
): Promise<AcceptedImage> {
  const { data, origin } = await loadBytes(image, field, options);
  if (data.length === 0) throw new InputError(field, "image is empty");
  if (data.length > options.limits.maxImageBytes) {
    throw new InputError(field, `image is ${data.length} bytes, limit is ${options.limits.maxImageBytes}`);
  }
  let metadata: sharp.Metadata;
  try {
    // Header only; our own pixel limit below gives the precise error for oversized images.
    metadata = await sharp(data, { limitInputPixels: false }).metadata();
  } catch (error) {
    throw new InputError(field, "not a readable image (corrupt or unsupported format)", { cause: error });
  }
  const mediaType = metadata.format ? mediaTypes[metadata.format] : undefined;
  if (!mediaType)
    throw new InputError(field, `unsupported image format ${metadata.format ?? "unknown"} (png, jpeg, webp, gif)`);
  const width = metadata.width ?? 0;
  const height = metadata.height ?? 0;
  // Checked from the header, before any pixel is decoded: a 50,000×50,000 PNG is refused cheaply.
  if (width * height > options.limits.maxImagePixels) {
    throw new InputError(field, `image is ${width}×${height} px, limit is ${options.limits.maxImagePixels} px`);
  }
  let thumbnail: Buffer;
  try {
    // failOn "warning": libjpeg and libpng report corrupt or missing scan data as warnings and fill
    // the gap with grey; such an image is refused rather than stored half-decoded.
    thumbnail = await sharp(data, { limitInputPixels: options.limits.maxImagePixels, failOn: "warning" })
      .rotate()
      .resize(thumbnailSize, thumbnailSize, { fit: "inside", withoutEnlargement: true })
      .webp({ quality: thumbnailQuality })
      .toBuffer();
  } catch (error) {
    throw new InputError(field, "image could not be decoded (corrupt or truncated)", { cause: error });
  }
  return {
    hash: createHash("sha256").update(data).digest("hex"),
    mediaType,
    bytes: data.length,
    width,
    height,
    data,
    thumbnail,
    origin,
  };
}

async function loadBytes(
  image: PixelImageInput,
  field: string,
  options: IntakeOptions,
): Promise<{ data: Uint8Array; origin: string | null }> {
  if ("path" in image) return { data: await readLocal(image.path, `${field}.path`, options), origin: image.path };
  if ("url" in image) {
    if (!options.allowRemoteImages) {
      throw new InputError(`${field}.url`, "remote images are not fetched unless allowed (--allow-remote-images)");
    }
    return { data: await fetchRemote(image.url, `${field}.url`, options), origin: image.url };
  }
  if (typeof image.data === "string") {
    const payload = image.data.replace(/^data:[^;,]+;base64,/, "");
    if (!/^[A-Za-z0-9+/=\s]+$/.test(payload)) throw new InputError(`${field}.data`, "not valid base64");
    return { data: Buffer.from(payload, "base64"), origin: null };
  }
  return { data: image.data, origin: null };
}

async function readLocal(path: string, field: string, options: IntakeOptions): Promise<Uint8Array> {
  const { baseDir } = options;
  if (!baseDir) throw new InputError(field, "image paths need a base folder (the input file's folder)");
  if (isAbsolute(path)) throw new InputError(field, "image paths must be relative to the input file");
  const root = await realpath(baseDir).catch((error) => {
    throw new InputError(field, `base folder ${baseDir} is not readable`, { cause: error });
  });
  const candidate = resolve(root, path);
  // Resolve symlinks too, so a link inside the folder cannot point outside it.
  const real = await realpath(candidate).catch((error) => {
    throw new InputError(field, `image ${path} is missing or unreadable`, { cause: error });
  });
  const inside = relative(root, real);
  if (inside.startsWith(`..${sep}`) || inside === ".." || isAbsolute(inside)) {
    throw new InputError(field, `image path ${path} leaves the input folder`);
  }
  // Only a regular file is read, within the time-out: a FIFO named x.png must not hang the write.
  return readRegularFile(real, field, {
    timeoutMs: options.limits.fileReadTimeoutMs,
    maxBytes: options.limits.maxImageBytes,
    what: "image",
  });
}

async function fetchRemote(url: string, field: string, options: IntakeOptions): Promise<Uint8Array> {
  const protocol = new URL(url).protocol;
  if (protocol !== "https:" && protocol !== "http:") throw new InputError(field, `unsupported URL scheme ${protocol}`);
  const timeoutMs = options.limits.imageFetchTimeoutMs;
  // One deadline for the headers and the body: a server that sends headers and then stalls is cut off too.
  const signal = AbortSignal.timeout(timeoutMs);
  const late = () => new InputError(field, `${url} did not arrive within ${timeoutMs} ms`);
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(url, { signal });
  } catch (error) {
    if (signal.aborted) throw late();
    throw new InputError(field, `could not fetch ${url}`, { cause: error });
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined);
    throw new InputError(field, `fetching ${url} answered ${response.status}`);
  }
  const declared = Number(response.headers.get("content-length") ?? 0);
  if (declared > options.limits.maxImageBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw new InputError(field, `remote image is ${declared} bytes, limit is ${options.limits.maxImageBytes}`);
  }
  return readBody(response, field, { signal, late, maxBytes: options.limits.maxImageBytes });
}

/**
 * The body under the deadline and the byte limit, whatever `fetch` was injected: the read races
 * the signal itself, since a custom `fetch` need not honour it.
 */
async function readBody(
  response: Response,
  field: string,
  options: { signal: AbortSignal; late: () => InputError; maxBytes: number },
): Promise<Uint8Array> {
  const reader = response.body?.getReader();
  if (!reader) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let onAbort: () => void = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(options.late());
    if (options.signal.aborted) onAbort();
    else options.signal.addEventListener("abort", onAbort, { once: true });
  });
  aborted.catch(() => undefined);
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await Promise.race([reader.read(), aborted]);
      } catch (error) {
        if (error instanceof InputError) throw error;
        if (options.signal.aborted) throw options.late();
        throw new InputError(field, "the remote image's body could not be read", { cause: error });
      }
      if (chunk.done) break;
      total += chunk.value.length;
      if (total > options.maxBytes) throw new InputError(field, `remote image is over ${options.maxBytes} bytes`);
      chunks.push(chunk.value);
    }
  } catch (error) {
    await reader.cancel().catch(() => undefined);
    throw error;
  } finally {
    options.signal.removeEventListener("abort", onAbort);
  }
  return new Uint8Array(Buffer.concat(chunks));
}
