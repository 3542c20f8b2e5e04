import type { Route } from "./router.ts";

/**
 * The order a routed pack is read in: relevance order, with latest-state-first as a tie rule. The
 * raw nodes of one version chain (an entry and the earlier states routing reached through its links)
 * keep the positions relevance gave them; within those positions the latest state comes first. Every
 * other item stays where relevance put it, so a chain cannot push unrelated evidence down the pack
 * (what holding earlier states back until their latest state did: `latestFirst`).
 */
export function latestFirstWithinChains<T>(ordered: readonly T[], idOf: (item: T) => string, route: Route): T[] {
  const chains = new Map<string, number[]>();
  ordered.forEach((item, position) => {
    const via = route.nodes.get(idOf(item));
    if (!via) return;
    chains.set(via.head, [...(chains.get(via.head) ?? []), position]);
  });
  const out = [...ordered];
  for (const positions of chains.values()) {
    if (positions.length < 2) continue;
    const items = positions.map((position) => ordered[position] as T);
    // Stable: the latest state's items first (in relevance order), then earlier states (in relevance order).
    const rank = (item: T) => (route.nodes.get(idOf(item))?.via === "earlier-state" ? 1 : 0);
    const sorted = items
      .map((item, index) => ({ item, index }))
      .sort((a, b) => rank(a.item) - rank(b.item) || a.index - b.index);
    positions.forEach((position, index) => {
      out[position] = sorted[index]?.item as T;
    });
  }
  return out;
}
