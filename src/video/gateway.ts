/**
 * The stream gateway: any source ffmpeg reads (a file, an `rtsp://` or `http(s)://` stream, or
 * bytes on stdin) normalised to RGB frames at a fixed rate plus 16 kHz mono PCM audio. Nothing
 * here assumes the stream ends: frames are handed over as they are decoded, and `stop()` ends a
 * live source at any point.
 */
import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { FfmpegMissingError, VideoSourceError } from "./video-errors.ts";

export type VideoSource =
  | { readonly kind: "file"; readonly path: string }
  | { readonly kind: "url"; readonly url: string }
  | { readonly kind: "stdin"; readonly stream: Readable; readonly label?: string };

export interface GatewayOptions {
  /** Frames per second handed to the pipeline (DESIGN §4: 1 frame/s by default). */
  readonly fps: number;
  /** Frames wider than this are scaled down, keeping the aspect ratio. */
  readonly maxWidth: number;
  readonly ffmpegPath: string;
  readonly ffprobePath: string;
  /** How long a network source may take to answer before it counts as unreachable. */
  readonly connectTimeoutMs: number;
}

export const defaultGatewayOptions: GatewayOptions = Object.freeze({
  fps: 1,
  maxWidth: 768,
  ffmpegPath: "ffmpeg",
  ffprobePath: "ffprobe",
  connectTimeoutMs: 10_000,
});

export const audioSampleRate = 16_000;

export interface Frame {
  readonly index: number;
  /** Media time from the start of the stream. */
  readonly timeMs: number;
  readonly width: number;
  readonly height: number;
  /** Packed RGB, `width * height * 3` bytes. */
  readonly rgb: Uint8Array;
}

export interface ProbedSource {
  readonly width: number;
  readonly height: number;
  readonly hasAudio: boolean;
  /** Seconds, when the container says (a live stream does not). */
  readonly durationS: number | null;
}

/** An open source. Read frames with `frames()`; audio accumulates and is read by time. */
export interface VideoStream {
  readonly label: string;
  readonly probe: ProbedSource;
  /** Output frame size after scaling. */
  readonly width: number;
  readonly height: number;
  readonly fps: number;
  frames(): AsyncIterable<Frame>;
  /** 16 kHz mono samples in [fromMs, toMs); waits until the audio has reached `toMs` or ended. */
  audio(fromMs: number, toMs: number): Promise<{ samples: Int16Array; status: "ok" | "absent" | "failed" }>;
  /** Drops audio before `beforeMs`: a long stream keeps only what the open segment still needs. */
  releaseAudio(beforeMs: number): void;
  /** Stops decoding; frames already handed over stay valid. */
  stop(): void;
}

/** `-` is stdin; `rtsp://`, `rtsps://`, `http://`, `https://` are network streams; anything else a file. */
export function parseVideoSource(text: string, stdin: Readable = process.stdin): VideoSource {
  if (text === "-") return { kind: "stdin", stream: stdin };
  if (/^(rtsps?|https?):\/\//i.test(text)) return { kind: "url", url: text };
  return { kind: "file", path: text };
}

export function describeSource(source: VideoSource): string {
  return source.kind === "file" ? source.path : source.kind === "url" ? source.url : (source.label ?? "stdin");
}

/**
 * Opens a source: checks it (missing file, no video track, unreachable stream, ffmpeg missing are
 * typed errors, raised before anything is decoded) and starts ffmpeg.
 */
export async function openVideoStream(source: VideoSource, options: GatewayOptions): Promise<VideoStream> {
  const label = describeSource(source);
  if (source.kind === "file") {
    const info = await stat(source.path).catch(() => null);
    if (!info) throw new VideoSourceError("missing", label, "");
    if (!info.isFile()) throw new VideoSourceError("not-video", label, "not a regular file");
  }
  // stdin cannot be read twice: its head is kept for the probe and replayed to ffmpeg.
  const head = source.kind === "stdin" ? await readHead(source.stream, stdinProbeBytes) : null;
  const probe = await probeSource(source, label, options, head);
  const width = Math.min(options.maxWidth, probe.width) & ~1;
  const height = Math.max(2, Math.round((probe.height * width) / probe.width / 2) * 2);
  return startDecoder(source, label, options, probe, { width, height }, head);
}

/**
 * Checks a file or network source without decoding it (the same typed errors as `openVideoStream`),
 * so a caller can refuse a bad source before creating anything. Not for stdin, which reads once.
 */
export async function checkVideoSource(
  source: Exclude<VideoSource, { kind: "stdin" }>,
  options: GatewayOptions,
): Promise<ProbedSource> {
  const label = describeSource(source);
  if (source.kind === "file") {
    const info = await stat(source.path).catch(() => null);
    if (!info) throw new VideoSourceError("missing", label, "");
    if (!info.isFile()) throw new VideoSourceError("not-video", label, "not a regular file");
  }
  return probeSource(source, label, options, null);
}

/** Enough of a stream for ffprobe to find its tracks (MPEG-TS, Matroska, fragmented MP4). */
const stdinProbeBytes = 4 * 1024 * 1024;

async function readHead(stream: Readable, limit: number): Promise<{ bytes: Buffer; ended: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  stream.pause();
  return new Promise((resolve, reject) => {
    const finish = (ended: boolean) => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("error", onError);
      stream.pause();
      resolve({ bytes: Buffer.concat(chunks), ended });
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) finish(false);
    };
    const onEnd = () => finish(true);
    const onError = (error: Error) => reject(error);
    stream.on("data", onData);
    stream.on("end", onEnd);
    stream.on("error", onError);
    stream.resume();
  });
}

function networkOptions(source: VideoSource, options: GatewayOptions): string[] {
  if (source.kind !== "url") return [];
  const micros = String(options.connectTimeoutMs * 1000);
  return /^rtsps?:/i.test(source.url) ? ["-timeout", micros] : ["-rw_timeout", micros];
}

function inputArgument(source: VideoSource): string {
  return source.kind === "file" ? `file:${source.path}` : source.kind === "url" ? source.url : "pipe:0";
}

interface ProbeJson {
  streams?: { codec_type?: string; width?: number; height?: number }[];
  format?: { duration?: string };
}

async function probeSource(
  source: VideoSource,
  label: string,
  options: GatewayOptions,
  head: { bytes: Buffer } | null,
): Promise<ProbedSource> {
  const args = [
    "-v",
    "error",
    ...networkOptions(source, options),
    "-show_streams",
    "-show_format",
    "-of",
    "json",
    inputArgument(source),
  ];
  const { code, stdout, stderr } = await run(options.ffprobePath, args, head?.bytes, options.connectTimeoutMs + 5_000);
  if (code !== 0) throw classifyFailure(source, label, stderr);
  let parsed: ProbeJson;
  try {
    parsed = JSON.parse(stdout) as ProbeJson;
  } catch {
    throw new VideoSourceError("not-video", label, "ffprobe gave no stream description");
  }
  const video = parsed.streams?.find((stream) => stream.codec_type === "video" && stream.width && stream.height);
  if (!video?.width || !video.height) throw new VideoSourceError("not-video", label, "no video track");
  const duration = Number(parsed.format?.duration);
  return {
    width: video.width,
    height: video.height,
    hasAudio: parsed.streams?.some((stream) => stream.codec_type === "audio") ?? false,
    durationS: Number.isFinite(duration) ? duration : null,
  };
}

function classifyFailure(source: VideoSource, label: string, stderr: string): VideoSourceError {
  const detail = stderr.trim().split("\n").at(-1)?.slice(0, 300) ?? "";
  if (source.kind === "url") return new VideoSourceError("unreachable", label, detail);
  if (/no such file/i.test(stderr)) return new VideoSourceError("missing", label, detail);
  return new VideoSourceError("not-video", label, detail);
}

function run(
  binary: string,
  args: readonly string[],
  input: Buffer | undefined,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: [input ? "pipe" : "ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(error.code === "ENOENT" ? new FfmpegMissingError(binary) : error);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr: code === null ? `${stderr}\ntimed out after ${timeoutMs} ms` : stderr });
    });
    if (input && child.stdin) {
      // ffprobe may stop reading once it has seen enough; that is not an error.
      child.stdin.on("error", () => {});
      child.stdin.end(input);
    }
  });
}

function startDecoder(
  source: VideoSource,
  label: string,
  options: GatewayOptions,
  probe: ProbedSource,
  size: { width: number; height: number },
  head: { bytes: Buffer; ended: boolean } | null,
): VideoStream {
  const { width, height } = size;
  const args = [
    "-hide_banner",
    "-loglevel",
    "error",
    ...networkOptions(source, options),
    "-i",
    inputArgument(source),
    "-map",
    "0:v:0",
    "-vf",
    `fps=${options.fps},scale=${width}:${height}`,
    "-pix_fmt",
    "rgb24",
    "-f",
    "rawvideo",
    "pipe:1",
    // Raw PCM carries no timestamps: a reader finds a moment's audio by counting samples. Sources with
    // gaps in their audio timestamps (dropped packets on a network stream, joined or looped files)
    // would then drift ahead of the picture by every gap; aresample's async mode fills gaps with
    // silence and trims overlaps, so sample n stays at media time n / 16 kHz.
    ...(probe.hasAudio
      ? [
          "-map",
          "0:a:0",
          "-af",
          "aresample=async=1",
          "-ac",
          "1",
          "-ar",
          String(audioSampleRate),
          "-f",
          "s16le",
          "pipe:3",
        ]
      : []),
  ];
  const child = spawn(options.ffmpegPath, args, {
    stdio: [source.kind === "stdin" ? "pipe" : "ignore", "pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  if (source.kind === "stdin" && child.stdin && head) {
    child.stdin.on("error", () => {});
    child.stdin.write(head.bytes);
    if (head.ended) child.stdin.end();
    else source.stream.pipe(child.stdin);
  }

  const frameBytes = width * height * 3;
  const queue: Frame[] = [];
  const highWater = 8;
  /** Frames held while a reader waits for audio; past it, the audio counts as late. */
  const hardCap = 60;
  const audioPipe = child.stdio[3] as Readable | null;
  const audio = new AudioBuffer(probe.hasAudio && audioPipe ? "ok" : "absent", () => {
    // Someone waits for audio: let video run ahead (up to the hard cap) so ffmpeg can reach that audio.
    if (child.stdout?.isPaused() && queue.length < hardCap) child.stdout.resume();
    return child.stdout?.isPaused() === true;
  });
  if (probe.hasAudio && audioPipe) {
    audioPipe.on("data", (chunk: Buffer) => audio.append(chunk));
    audioPipe.on("error", () => audio.fail());
    audioPipe.on("end", () => audio.end());
  }
  let exit: Promise<number | null> = new Promise((resolve) => child.on("close", (code) => resolve(code)));
  let spawnError: Error | null = null;
  child.on("error", (error: NodeJS.ErrnoException) => {
    spawnError = error.code === "ENOENT" ? new FfmpegMissingError(options.ffmpegPath) : error;
    audio.fail();
  });
  let stopped = false;
  exit = exit.then((code) => {
    audio.end();
    return code;
  });

  // Video is read into a small queue as ffmpeg writes it, paused at `highWater` frames. A reader
  // waiting for audio must not hold ffmpeg up: it may need to write more video before it writes the
  // audio that is waited for (its outputs are interleaved, and a looped or badly muxed file drifts).
  // So while audio is awaited the queue may grow to `hardCap`; there the wait ends, the audio counts
  // as late (reported as failed: the gate analyses the segment) instead of the pipeline stalling.
  let videoDone = false;
  let videoError: Error | null = null;
  let wakeReader: (() => void) | null = null;
  const stdout = child.stdout;
  if (stdout) {
    let pending: Buffer = Buffer.alloc(0);
    let index = 0;
    stdout.on("data", (chunk: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length >= frameBytes) {
        const rgb = new Uint8Array(pending.subarray(0, frameBytes));
        pending = pending.subarray(frameBytes);
        queue.push({ index, timeMs: Math.round((index * 1000) / options.fps), width, height, rgb });
        index += 1;
      }
      if (queue.length >= (audio.waiting ? hardCap : highWater)) {
        stdout.pause();
        audio.videoStalled();
      }
      wakeReader?.();
    });
    stdout.on("end", () => {
      void exit.then((code) => {
        if (spawnError) videoError = spawnError;
        // A stop ends the stream on purpose; a decoder that failed before its first frame read no video.
        else if (!stopped && code !== 0 && index === 0) videoError = classifyFailure(source, label, stderr);
        videoDone = true;
        wakeReader?.();
      });
    });
  } else {
    videoDone = true;
  }

  async function* frames(): AsyncGenerator<Frame> {
    while (true) {
      const frame = queue.shift();
      if (frame) {
        if (queue.length < highWater / 2 && stdout?.isPaused()) stdout.resume();
        yield frame;
        continue;
      }
      if (videoDone) break;
      if (stdout?.isPaused()) stdout.resume();
      await new Promise<void>((resolve) => {
        wakeReader = resolve;
      });
      wakeReader = null;
    }
    if (videoError) throw videoError;
  }

  return {
    label,
    probe,
    width,
    height,
    fps: options.fps,
    frames,
    audio: (fromMs, toMs) => audio.read(fromMs, toMs),
    releaseAudio: (beforeMs) => audio.release(beforeMs),
    stop() {
      if (stopped) return;
      stopped = true;
      child.kill("SIGTERM");
    },
  };
}

/** PCM received so far, readable by media time; a reader waits for samples not yet decoded. */
class AudioBuffer {
  #chunks: Buffer[] = [];
  #samples = new Int16Array(0);
  /** Stream sample index of `#samples[0]`. */
  #base = 0;
  #odd: Buffer | null = null;
  #ended = false;
  #reading = false;
  #status: "ok" | "absent" | "failed";
  #waiters: (() => void)[] = [];
  /**
   * Lets video run ahead while audio is awaited, and says when it cannot any more (paused at the hard
   * cap): waiting for audio then would deadlock, as ffmpeg must write video before it writes that audio.
   */
  readonly #videoBlocked: () => boolean;

  constructor(status: "ok" | "absent", videoBlocked: () => boolean) {
    this.#status = status;
    this.#videoBlocked = videoBlocked;
    if (status === "absent") this.#ended = true;
  }

  append(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#wake();
  }

  fail(): void {
    if (this.#status === "ok") this.#status = "failed";
    this.end();
  }

  end(): void {
    this.#ended = true;
    this.#wake();
  }

  async read(fromMs: number, toMs: number): Promise<{ samples: Int16Array; status: "ok" | "absent" | "failed" }> {
    const to = Math.floor((toMs * audioSampleRate) / 1000);
    this.#reading = true;
    while (!this.#ended && this.#base + this.#flatten().length < to && !this.#videoBlocked()) {
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    this.#reading = false;
    const samples = this.#flatten();
    const from = Math.max(0, Math.floor((fromMs * audioSampleRate) / 1000) - this.#base);
    const late = !this.#ended && this.#base + samples.length < to;
    return {
      samples: samples.slice(from, Math.max(from, to - this.#base)),
      status: late ? "failed" : this.#status,
    };
  }

  /** The video side paused (its queue is full): a reader waiting for audio looks again whether to stop waiting. */
  videoStalled(): void {
    this.#wake();
  }

  /** Whether a reader is waiting for audio not yet decoded. */
  get waiting(): boolean {
    return this.#waiters.length > 0 || this.#reading;
  }

  release(beforeMs: number): void {
    const drop = Math.floor((beforeMs * audioSampleRate) / 1000) - this.#base;
    if (drop <= 0) return;
    const samples = this.#flatten();
    this.#samples = samples.slice(Math.min(drop, samples.length));
    this.#base += Math.min(drop, samples.length);
  }

  #flatten(): Int16Array {
    if (this.#chunks.length === 0) return this.#samples;
    const bytes = Buffer.concat([...(this.#odd ? [this.#odd] : []), ...this.#chunks]);
    this.#chunks = [];
    const whole = bytes.length - (bytes.length % 2);
    this.#odd = whole < bytes.length ? bytes.subarray(whole) : null;
    const added = new Int16Array(whole / 2);
    for (let i = 0; i < added.length; i++) added[i] = bytes.readInt16LE(i * 2);
    const merged = new Int16Array(this.#samples.length + added.length);
    merged.set(this.#samples);
    merged.set(added, this.#samples.length);
    this.#samples = merged;
    return merged;
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}
