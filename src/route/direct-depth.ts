import type { RouteConfig } from "../evidence/route-trace.ts";

/**
 * How many of each direct text channel's own best hits (lexical and dense, over all raw nodes) join the
 * candidate set that routing's candidates are ranked with (issue 19, multi-hop): `routing.directDepth`
 * when set above the channel depth, else the channel depth itself (`perChannel`, at least the budget's
 * raw nodes). Deeper direct hits cost no extra lexical pass (that pass is 100 deep already) and one
 * deeper ANN pass; they only widen what the fused ranking can choose from.
 */
export function directDepth(routing: Pick<RouteConfig, "directDepth">, perChannel: number): number {
  const configured = routing.directDepth ?? 0;
  return Math.max(perChannel, Number.isFinite(configured) ? Math.floor(configured) : 0);
}
