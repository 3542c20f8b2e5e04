/**
 * What routing reports in an evidence pack: the types live with the pack they travel in, so the
 * evidence layer never imports the router.
 */

/** Settings of budgeted routing (C3M BMER); the page beam itself is the budget's `pages`. */
export interface RouteConfig {
  /** Weight of coverage gain when choosing pages (C3M γ). */
  readonly gamma: number;
  /** Weight of coverage when choosing evidence (C3M λ). */
  readonly lambda: number;
  /** Entries taken from the chosen pages. */
  readonly entries: number;
  /** Entries reached through links of a chosen entry (overflow fallbacks, earlier states), per entry. */
  readonly linked: number;
  /** Raw nodes either side (same session) added around what a chosen entry points at. */
  readonly window: number;
  /** How candidates' signals combine: reciprocal-rank fusion of each list's top, or a sum of scaled scores over all. */
  readonly fusion: "rrf" | "sum";
  /**
   * The pack's order: `relevance` keeps relevance order and puts a version chain's latest state first only
   * within the positions the chain's items hold (a tie rule); `latest-first` holds every earlier state back
   * until its latest state, moving whatever lies between.
   */
  readonly order: "relevance" | "latest-first";
  /**
   * Weight of the image channel in score fusion for a question that does not ask about something seen
   * (no query image, no words such as "photo" or "picture"; route/query-intent.ts); 1 for one that does.
   */
  readonly imageWeight: number;
  /**
   * Query understanding (route/focus-rerank.ts, decision 024): weights added, on the scale of the best
   * candidate's fused score (1), to the candidates the packer can reach. `sessionWeight`: times the
   * candidate's session score (its session's best few candidates, summed).
   */
  readonly sessionWeight: number;
  /** Added to a candidate dated in a time window the question names ("in May 2023", "last week"). */
  readonly timeWeight: number;
  /** Days a time window's end is stretched: a session tells of days before its own date. */
  readonly timeSlackDays: number;
  /** Added to a candidate said by a speaker the question names (when it does not name every speaker present). */
  readonly speakerWeight: number;
  /**
   * Pseudo-relevance feedback: the weight of a second lexical pass, seeded by the first pass's best
   * items, in its reciprocal-rank fusion with the first pass's order; 0 runs no second pass.
   */
  readonly feedbackWeight: number;
  /** Which questions get the second pass: those asking for several pieces of evidence (`several`), or every one (`all`). */
  readonly feedbackFor: "several" | "all";
  /**
   * Levels of links followed from a chosen entry (overflow fallbacks hosted by fallbacks, earlier
   * states of earlier states); each level is one read of linked entries (decision 029).
   */
  readonly linkDepth: number;
}

/** How a raw node was reached: directly from a chosen entry, or through one of its links. */
export type RouteVia = "entry" | "overflow" | "earlier-state" | "neighbour";

export interface RouteTrace {
  readonly pages: readonly {
    readonly page: number;
    readonly entries: number;
    readonly similarity: number;
    readonly coverageGain: number;
    readonly score: number;
    readonly read: boolean;
  }[];
  readonly entries: readonly {
    readonly id: string;
    readonly page: number | null;
    readonly status: string;
    readonly score: number;
    readonly via: RouteVia;
    readonly chosen: boolean;
  }[];
  /** Raw nodes the chosen entries expanded to (the candidate set C_q). */
  readonly expanded: number;
  readonly config: RouteConfig & { readonly pageBeam: number };
}
