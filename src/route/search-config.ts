import type { SearchMode } from "../evidence/evidence-pack.ts";
import type { RouteConfig } from "../evidence/route-trace.ts";
import { defaultRouteConfig } from "./router.ts";

/** See `SearchConfig.minScore`. */
export const defaultMinScore = 0;

/** Settings of the read pipeline. Defaults from DESIGN §4 (M2A fusion, C3M routing); the object handed around is frozen. */

export interface SearchConfig {
  readonly mode: SearchMode;
  readonly routing: RouteConfig;
  /** RRF constant (M2A, Cormack et al.): rank r contributes 1/(k + r). */
  readonly rrfK: number;
  /** Candidates each channel contributes to fusion. */
  readonly perChannel: number;
  /**
   * Evidence holding less than this share of the query's content words is left out of the pack
   * (`channels/relevance.ts`; docs/decisions/017). 0 keeps everything retrieved.
   */
  readonly minScore: number;
}

export const defaultSearchConfig: SearchConfig = Object.freeze({
  mode: "cairn",
  routing: defaultRouteConfig,
  /** M2A's and Cormack et al.'s constant (DESIGN §4): damps the lead of the very first ranks. */
  rrfK: 60,
  /** M2A's top-10 per channel (DESIGN §4). */
  perChannel: 10,
  /**
   * Off by default: word coverage misses synonyms and words only in pixels (docs/decisions/017); 0.2
   * (one content word of a question of up to five) is the measured suggestion.
   */
  minScore: defaultMinScore,
});

export type { SearchMode } from "../evidence/evidence-pack.ts";
