import { defaultRouteConfig, type RouteConfig } from "./routing/router.ts";

/** Defaults from DESIGN §4 (C3M / M2A). Every value is overridable; the object handed around is frozen. */
export interface Budget {
  /** Index pages routing may read (C3M page beam). */
  readonly pages: number;
  /** Raw nodes in the pack. */
  readonly rawNodes: number;
  /** Original images in the pack. */
  readonly images: number;
  /** Text tokens of the pack's raw-node text (o200k tokenizer). */
  readonly textTokens: number;
}

/**
 * - `cairn` (default): routing through the active index fused with the direct channels over raw nodes.
 * - `route`: C3M BMER alone: only what routing reaches is read.
 * - `tri-path`: M2A's direct channels only, no index.
 */
export type SearchMode = "cairn" | "route" | "tri-path";

export interface SearchConfig {
  readonly mode: SearchMode;
  readonly routing: RouteConfig;
  /** RRF constant (M2A, Cormack et al.): rank r contributes 1/(k + r). */
  readonly rrfK: number;
  /** Candidates each channel contributes to fusion. */
  readonly perChannel: number;
}

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

export const defaultBudget: Budget = Object.freeze({ pages: 3, rawNodes: 12, images: 8, textTokens: 12_000 });
export const defaultSearchConfig: SearchConfig = Object.freeze({
  mode: "cairn",
  routing: defaultRouteConfig,
  rrfK: 60,
  perChannel: 10,
});
export const defaultIngestLimits: IngestLimits = Object.freeze({
  maxTextChars: 100_000,
  maxImageBytes: 20 * 1024 * 1024,
  maxImagePixels: 40_000_000,
  maxTurnsPerSession: 10_000,
  maxImagesPerTurn: 32,
});
