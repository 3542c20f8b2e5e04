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

/** Generous bounds on one write, there to stop abuse rather than to shape data; set in af873f5, not measured. */
export const defaultIngestLimits: IngestLimits = Object.freeze({
  /** A long pasted document still fits in one turn. */
  maxTextChars: 100_000,
  /** Room for a full-size photo. */
  maxImageBytes: 20 * 1024 * 1024,
  /** Room for a full-size photo; a decompression bomb claims far more and is refused from its header. */
  maxImagePixels: 40_000_000,
  /** A whole conversation log or stream as one session. */
  maxTurnsPerSession: 10_000,
  /** An album's worth of images in one turn. */
  maxImagesPerTurn: 32,
});
