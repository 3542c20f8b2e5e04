/** Limits on untrusted input, checked before anything is decoded or written. */
export interface IngestLimits {
  /** Longest text of one turn, in characters. */
  readonly maxTextChars: number;
  /** Largest encoded image file. */
  readonly maxImageBytes: number;
  /** Largest decoded image, in pixels; guards against decompression bombs. */
  readonly maxImagePixels: number;
  readonly maxTurnsPerSession: number;
  readonly maxImagesPerTurn: number;
}

export const defaultIngestLimits: IngestLimits = Object.freeze({
  maxTextChars: 100_000,
  maxImageBytes: 20 * 1024 * 1024,
  maxImagePixels: 40_000_000,
  maxTurnsPerSession: 10_000,
  maxImagesPerTurn: 32,
});
