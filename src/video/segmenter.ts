import type { Frame } from "./gateway.ts";

/**
 * Cuts a frame sequence into segments at natural boundaries: a scene change (the frame differs
 * from the previous one by more than `sceneCut`), the start or end of speech, or the maximum
 * length. Pure: frames and their voice activity go in, closed segments come out.
 */
export interface SegmenterConfig {
  /** Mean absolute difference of 32×18 grey thumbnails (0–1) above which a frame starts a new scene. */
  readonly sceneCut: number;
  readonly maxSegmentMs: number;
  /** A speech boundary does not cut a segment shorter than this. */
  readonly minSegmentMs: number;
}

export const defaultSegmenterConfig: SegmenterConfig = Object.freeze({
  sceneCut: 0.18,
  maxSegmentMs: 10_000,
  minSegmentMs: 2_000,
});

export type CutReason = "scene" | "speech" | "max-length" | "end";

export interface SegmentFrame {
  readonly frame: Frame;
  /** Grey thumbnail, values 0–1. */
  readonly signature: Float32Array;
  /** Difference to the previous frame of the stream (0 for the first). */
  readonly change: number;
  readonly voicedMs: number;
}

export interface Segment {
  readonly index: number;
  readonly startMs: number;
  /** Exclusive: the time the next frame would start. */
  readonly endMs: number;
  readonly frames: readonly SegmentFrame[];
  /** Why the segment before this one ended: a `scene` cut starts a new shot. */
  readonly startedBy: CutReason | "start";
  readonly endedBy: CutReason;
  /** Mean frame-to-frame change inside the segment (0–1). */
  readonly motion: number;
  readonly voicedMs: number;
  readonly audio: "ok" | "absent" | "failed";
}

const signatureWidth = 32;
const signatureHeight = 18;

/** A 32×18 grey thumbnail by block averaging: cheap enough for every frame. */
export function frameSignature(frame: Frame): Float32Array {
  const signature = new Float32Array(signatureWidth * signatureHeight);
  const counts = new Uint32Array(signature.length);
  const { width, height, rgb } = frame;
  // Every other pixel in each direction is plenty for a 32×18 average.
  for (let y = 0; y < height; y += 2) {
    const row = Math.min(signatureHeight - 1, Math.floor((y * signatureHeight) / height));
    for (let x = 0; x < width; x += 2) {
      const column = Math.min(signatureWidth - 1, Math.floor((x * signatureWidth) / width));
      const offset = (y * width + x) * 3;
      const grey = 0.299 * (rgb[offset] ?? 0) + 0.587 * (rgb[offset + 1] ?? 0) + 0.114 * (rgb[offset + 2] ?? 0);
      const cell = row * signatureWidth + column;
      signature[cell] = (signature[cell] ?? 0) + grey / 255;
      counts[cell] = (counts[cell] ?? 0) + 1;
    }
  }
  for (let i = 0; i < signature.length; i++) signature[i] = (signature[i] ?? 0) / Math.max(1, counts[i] ?? 1);
  return signature;
}

export function signatureChange(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs((a[i] ?? 0) - (b[i] ?? 0));
  return sum / a.length;
}

/**
 * Streaming segmenter: `push` each frame with its voice activity; it returns a segment when one
 * closes. Holds only the open segment, so its memory does not grow with the stream.
 */
export class Segmenter {
  readonly #config: SegmenterConfig;
  readonly #frameMs: number;
  #open: SegmentFrame[] = [];
  #previous: Float32Array | null = null;
  #index = 0;
  #startedBy: CutReason | "start" = "start";
  #wasVoiced = false;
  #audio: "ok" | "absent" | "failed" = "absent";

  constructor(options: { fps: number; config?: SegmenterConfig }) {
    this.#config = options.config ?? defaultSegmenterConfig;
    this.#frameMs = 1000 / options.fps;
  }

  push(frame: Frame, voice: { voicedMs: number; audio: "ok" | "absent" | "failed" }): Segment | null {
    const signature = frameSignature(frame);
    const change = this.#previous ? signatureChange(this.#previous, signature) : 0;
    this.#previous = signature;
    const voiced = voice.voicedMs > this.#frameMs / 4;
    let closed: Segment | null = null;
    if (this.#open.length > 0) {
      const openMs = frame.timeMs - (this.#open[0]?.frame.timeMs ?? frame.timeMs);
      const reason: CutReason | null =
        change >= this.#config.sceneCut
          ? "scene"
          : openMs >= this.#config.maxSegmentMs
            ? "max-length"
            : voiced !== this.#wasVoiced && openMs >= this.#config.minSegmentMs
              ? "speech"
              : null;
      if (reason) closed = this.#close(reason, frame.timeMs);
    }
    this.#wasVoiced = voiced;
    if (voice.audio === "failed" || (voice.audio === "ok" && this.#audio === "absent")) this.#audio = voice.audio;
    this.#open.push({ frame, signature, change: this.#open.length === 0 ? 0 : change, voicedMs: voice.voicedMs });
    return closed;
  }

  /** Closes the open segment at the end of the stream (or when it is stopped). */
  flush(): Segment | null {
    const last = this.#open.at(-1);
    return last ? this.#close("end", last.frame.timeMs + this.#frameMs) : null;
  }

  #close(reason: CutReason, endMs: number): Segment {
    const frames = this.#open;
    const changes = frames.slice(1).map((frame) => frame.change);
    const segment: Segment = {
      index: this.#index,
      startMs: frames[0]?.frame.timeMs ?? endMs,
      endMs: Math.round(endMs),
      frames,
      startedBy: this.#startedBy,
      endedBy: reason,
      motion: changes.length ? changes.reduce((sum, value) => sum + value, 0) / changes.length : 0,
      voicedMs: frames.reduce((sum, frame) => sum + frame.voicedMs, 0),
      audio: this.#audio,
    };
    this.#index += 1;
    this.#startedBy = reason;
    this.#open = [];
    this.#audio = "absent";
    return segment;
  }
}
