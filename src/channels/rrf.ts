import { InvariantError } from "../core/errors.ts";
import type { Ranked } from "../core/ranked.ts";

/**
 * Top-level channels are fused together; the image channel is itself a fusion of its parts
 * (image-derived text by BM25 and by dense vectors, and image vectors for a query image), so
 * that images weigh as one channel, as in M2A's tri-path retrieval.
 */
export type ChannelName =
  | "bm25"
  | "dense"
  | "image"
  | "imageText"
  | "imageTextDense"
  | "imageVector"
  /** Raw nodes reached by routing through the active index, in route order. */
  | "route";

const channelNames: ReadonlySet<string> = new Set<ChannelName>([
  "bm25",
  "dense",
  "image",
  "imageText",
  "imageTextDense",
  "imageVector",
  "route",
]);

export function isChannelName(name: string): name is ChannelName {
  return channelNames.has(name);
}

/** The channels `lists` names, in insertion order (`Object.keys` would type them as plain strings). */
export function channelsOf(lists: Partial<Record<ChannelName, unknown>>): ChannelName[] {
  return Object.keys(lists).filter(isChannelName);
}

/**
 * Each named channel with its list, in insertion order. A channel named without a list is a
 * caller's mistake (a key set to `undefined`), reported as such rather than fused as empty.
 */
export function channelLists<T>(lists: Partial<Record<ChannelName, T>>): [ChannelName, T][] {
  return channelsOf(lists).map((channel) => {
    const list = lists[channel];
    if (list === undefined) throw new InvariantError("channel-list", `channel ${channel} is named without a list`);
    return [channel, list];
  });
}

export interface ChannelHit {
  readonly rank: number;
  readonly score: number;
}

export interface Fused {
  readonly id: string;
  readonly score: number;
  readonly channels: Partial<Record<ChannelName, ChannelHit>>;
}

/**
 * Reciprocal rank fusion (Cormack et al. 2009, as in M2A): each channel's top `perChannel`
 * results contribute 1/(k + rank), rank starting at 1. Ties keep the order of first appearance,
 * so the result is deterministic for the same inputs.
 */
export function fuseRrf(
  lists: Partial<Record<ChannelName, readonly Ranked[]>>,
  options: { k: number; perChannel: number },
): Fused[] {
  const fused = new Map<string, { score: number; channels: Partial<Record<ChannelName, ChannelHit>>; order: number }>();
  for (const [channel, list] of channelLists(lists)) {
    list.slice(0, options.perChannel).forEach((item, index) => {
      const rank = index + 1;
      const current = fused.get(item.id) ?? { score: 0, channels: {}, order: fused.size };
      current.score += 1 / (options.k + rank);
      current.channels[channel] = { rank, score: item.score };
      fused.set(item.id, current);
    });
  }
  return [...fused.entries()]
    .sort(([, a], [, b]) => b.score - a.score || a.order - b.order)
    .map(([id, { score, channels }]) => ({ id, score, channels }));
}
