import type { ChannelHit, ChannelName } from "../channels/rrf.ts";
import type { Budget } from "./budget.ts";
import type { BudgetDimension } from "./budget-packer.ts";
import type { RouteTrace, RouteVia } from "./route-trace.ts";

/**
 * How a pack was read (the pack reports it, so the type lives here):
 * - `cairn` (default): routing through the active index fused with the direct channels over raw nodes.
 * - `route`: C3M BMER alone: only what routing reaches is read.
 * - `tri-path`: M2A's direct channels only, no index.
 * - `compiled`: PMMC: the best-matching banked program runs on the current state when it passes the
 *   gate (α_route, δ); otherwise `cairn` answers, and the pack's `compiled` trace says why.
 */
export type SearchMode = "cairn" | "route" | "tri-path" | "compiled";

/** What a compiled search did: the program it ran, or why it fell back to the default search. */
export interface CompiledTrace {
  readonly ran: boolean;
  /** The best bank match (the program that ran, or the one that missed the gate); null for an empty bank. */
  readonly program: {
    readonly id: string;
    readonly question: string;
    readonly kind: string;
    readonly score: number;
    /** Its lead over the runner-up (its whole score when it has none). */
    readonly margin: number;
  } | null;
  /** Why the default search answered instead; null when the program ran. */
  readonly reason: string | null;
  readonly fallback: SearchMode | null;
  /** The program's steps and the raw nodes each yielded, when it ran. */
  readonly steps: readonly { readonly id: string; readonly op: string; readonly nodes: number }[];
  readonly gate: { readonly alphaRoute: number; readonly margin: number };
  /** The best bank matches (at most 5), best first: what Cover@5 and Match@5 read. */
  readonly candidates: readonly { readonly id: string; readonly score: number }[];
  readonly bankSize: number;
  readonly matchMs: number;
  readonly executeMs: number;
}

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
  /**
   * The share of the query's content words this evidence holds, in [0, 1], comparable across queries
   * (`channels/relevance.ts`); null for a query without words (an image alone) or a compiled program's evidence.
   */
  readonly relevance?: number | null;
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
  /** For `compiled` mode: which banked program ran, or why the default search answered. */
  readonly compiled?: CompiledTrace;
  /**
   * True when nothing in the pack is relevant: nothing was retrieved, or nothing reached the
   * relevance cut (`relevance.minScore`). An agent should answer "not in memory" rather than guess.
   */
  readonly noRelevantEvidence: boolean;
  /** The relevance cut applied (text queries): the threshold, the best candidate's score, and how many fell below. */
  readonly relevance?: { readonly minScore: number; readonly best: number | null; readonly cut: number };
  readonly warnings: readonly string[];
  readonly timings: { readonly embedMs: number; readonly searchMs: number; readonly totalMs: number };
}
