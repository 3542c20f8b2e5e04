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

export const defaultIndexBounds: IndexBounds = Object.freeze({
  entries: 36,
  pages: 6,
  tokens: 6_144,
  bytes: 384 * 1024,
});

export const defaultMaintenanceConfig: MaintenanceConfig = Object.freeze({
  bounds: defaultIndexBounds,
  candidates: 5,
  delta: 0.7,
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
