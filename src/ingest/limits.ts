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
  /** Largest metadata object of one turn, in bytes of its JSON serialization. */
  readonly maxMetadataBytes: number;
  /** Deepest nesting of a turn's metadata; the metadata object itself is depth 1. */
  readonly maxMetadataDepth: number;
  /** How long reading one local file (an input file, an image) may take before it is refused. */
  readonly fileReadTimeoutMs: number;
  /** How long fetching one remote image, body included, may take before it is refused. */
  readonly imageFetchTimeoutMs: number;
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
  /** Metadata annotates a turn (ids, tags, a few fields); 64 KiB is room for that, not for a document. */
  maxMetadataBytes: 64 * 1024,
  /** Real annotations are a few levels deep; 32 is far beyond that and far below what could exhaust a stack. */
  maxMetadataDepth: 32,
  /** A local disk answers in milliseconds; a stalled network mount should fail the write, not hold it. */
  fileReadTimeoutMs: 30_000,
  /** A remote image that has not fully arrived in 30 s fails the write instead of holding it open (af873f5). */
  imageFetchTimeoutMs: 30_000,
});
