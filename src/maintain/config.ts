/**
 * Settings of the maintained active index (C3M RAMU): its bounds and the relation threshold. The
 * defaults are DESIGN §4's; every value is overridable through `Memory.open({ maintenance })`.
 */

export interface IndexBounds {
  /** Active entries. */
  readonly entries: number;
  readonly pages: number;
  /** Routing-text tokens over all active entries (o200k). */
  readonly tokens: number;
  /** Bytes of the active entries: routing text, vectors, pointers. */
  readonly bytes: number;
}

export interface MaintenanceConfig {
  readonly bounds: IndexBounds;
  /** Candidate entries judged against an incoming one (C3M top-K). */
  readonly candidates: number;
  /** Relation confidence needed to Merge or Update (C3M δ). */
  readonly delta: number;
  /** A session is split into coherent segments of at most this many raw nodes, one incoming entry each. */
  readonly segmentMaxNodes: number;
}

/** C3M's shared limits on the active store (DESIGN §4), so results compare with the paper's baselines. */
export const defaultIndexBounds: IndexBounds = Object.freeze({
  entries: 36,
  pages: 6,
  /** 170 routing-text tokens per entry at 36 entries (decision 005). */
  tokens: 6_144,
  bytes: 384 * 1024,
});

export const defaultMaintenanceConfig: MaintenanceConfig = Object.freeze({
  bounds: defaultIndexBounds,
  /** C3M's candidate top-K (DESIGN §4). */
  candidates: 5,
  /** C3M's relation threshold δ (DESIGN §4). */
  delta: 0.7,
  /** Sessions in the datasets run to 20–30 turns; at most 8 per entry keeps routing text and vectors specific (decision 005). */
  segmentMaxNodes: 8,
});

export interface IndexUtilisation {
  readonly entries: number;
  readonly pages: number;
  readonly tokens: number;
  readonly bytes: number;
  readonly bounds: IndexBounds;
  /** Largest used/bound ratio over the four dimensions. */
  readonly utilisation: number;
  readonly pointers: number;
  readonly inactive: { readonly superseded: number; readonly merged: number; readonly overflow: number };
}
