import type { Fused } from "../channels/rrf.ts";
import { InvariantError } from "../core/errors.ts";

/** What coverage counts for a candidate: its source session and its evidence cluster (entry). */
export interface CoverageKey {
  readonly session: string;
  readonly cluster: string;
}

/** Coverage gain of a session not yet in the set, and of a cluster: equal halves, so a gain is in [0, 1] like relevance. */
const sessionGain = 0.5;
const clusterGain = 0.5;

/**
 * C3M Eq. 6, greedily: orders candidates so that each next one maximises its normalised relevance
 * plus λ times its coverage gain (half for a session not yet in the set, half for a cluster not
 * yet in it). The budget packer then admits them in this order, so no dimension is exceeded.
 * With λ = 0 this is the relevance order.
 */
export function orderWithCoverage(
  ranked: readonly Fused[],
  keys: ReadonlyMap<string, CoverageKey>,
  lambda: number,
): Fused[] {
  if (lambda === 0 || ranked.length < 2) return [...ranked];
  const top = Math.max(...ranked.map((hit) => hit.score));
  const remaining = [...ranked];
  const sessions = new Set<string>();
  const clusters = new Set<string>();
  const ordered: Fused[] = [];
  while (remaining.length > 0) {
    let bestAt = 0;
    let best = Number.NEGATIVE_INFINITY;
    remaining.forEach((hit, at) => {
      const key = keys.get(hit.id);
      const gain = key
        ? (sessions.has(key.session) ? 0 : sessionGain) + (clusters.has(key.cluster) ? 0 : clusterGain)
        : 0;
      const value = (top > 0 ? hit.score / top : 0) + lambda * gain;
      if (value > best) {
        best = value;
        bestAt = at;
      }
    });
    const [hit] = remaining.splice(bestAt, 1);
    if (!hit) throw new InvariantError("coverage-pick", `no candidate at ${bestAt} of ${remaining.length + 1}`);
    ordered.push(hit);
    const key = keys.get(hit.id);
    if (key) {
      sessions.add(key.session);
      clusters.add(key.cluster);
    }
  }
  return ordered;
}
