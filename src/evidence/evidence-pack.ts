import type { ChannelHit, ChannelName } from "../channels/rrf.ts";
import type { Budget } from "./budget.ts";
import type { BudgetDimension } from "./budget-packer.ts";
import type { RouteTrace, RouteVia } from "./route-trace.ts";

/**
 * How a pack was read (the pack reports it, so the type lives here):
 * - `cairn` (default): routing through the active index fused with the direct channels over raw nodes.
 * - `route`: C3M BMER alone: only what routing reaches is read.
 * - `tri-path`: M2A's direct channels only, no index.
 */
export type SearchMode = "cairn" | "route" | "tri-path";

export interface EvidenceImage {
  readonly hash: string;
  readonly mediaType: string;
  readonly bytes: number;
  readonly width: number;
  readonly height: number;
  readonly caption: string | null;
  readonly derivedText: string | null;
  /** Thumbnail: 256 px WebP of the same blob, fetched with `getBlob(scope, hash, { thumbnail: true })`. */
  readonly thumbnail: { readonly hash: string; readonly mediaType: "image/webp" };
}

export interface EvidenceItem {
  readonly rawNodeId: string;
  readonly text: string;
  readonly images: readonly EvidenceImage[];
  /**
   * Images handed to the reader as text: always those without pixels (`hash` null, e.g. dataset URLs
   * that no longer load), and every image when the search was made for a reader without vision.
   */
  readonly imagesAsText: readonly {
    readonly hash: string | null;
    readonly caption: string | null;
    readonly derivedText: string | null;
    readonly origin: string | null;
  }[];
  /** Images of this raw node left out because the image budget ran out. */
  readonly imagesCut: number;
  readonly provenance: {
    readonly sessionId: string;
    readonly sessionKey: string;
    readonly turn: number;
    readonly time: string;
    readonly speaker: string | null;
    readonly role: string | null;
    readonly source: string | null;
    readonly uri: string | null;
  };
  /** Fused score and each channel's rank (1-based) and raw score. */
  readonly score: number;
  readonly channels: Partial<Record<ChannelName, ChannelHit>>;
  /** Tokens of the text plus the text of `imagesAsText`. */
  readonly textTokens: number;
  /** How routing reached this raw node, when it did: its entry, the link followed, and whether it is a latest state. */
  readonly route?: { readonly entry: string; readonly via: RouteVia; readonly latest: boolean };
}

export interface EvidencePack {
  readonly query: { readonly text: string | null; readonly image: { readonly hash: string } | null };
  readonly items: readonly EvidenceItem[];
  readonly budget: {
    readonly limits: Budget;
    readonly used: Readonly<Record<BudgetDimension, number>>;
    readonly cut: Readonly<Record<BudgetDimension, number>>;
    /** Candidates that ranked but were left out, and the dimension that left them out. */
    readonly cutItems: readonly { readonly rawNodeId: string; readonly dimension: BudgetDimension }[];
  };
  readonly channelsUsed: readonly ChannelName[];
  /** How the pack was read: `cairn`, `route` or `tri-path`. */
  readonly mode: SearchMode;
  /**
   * Routing's trace (absent for `tri-path`): pages scored and read, entries chosen and reached
   * through links, raw nodes expanded; with `budget.cut`, it tells an update miss (the evidence
   * has no reachable entry), a routing miss (not expanded) and a budget cut (expanded, not packed) apart.
   */
  readonly route?: RouteTrace & { readonly selected: number };
  readonly warnings: readonly string[];
  readonly timings: { readonly embedMs: number; readonly searchMs: number; readonly totalMs: number };
}
