import type { Ranked } from "../core/ranked.ts";
import type { SearchFilters } from "../store/records.ts";
import type { ScopedStore } from "../store/store.ts";
import { type ChannelName, channelsOf, type Fused, fuseRrf } from "./rrf.ts";

/**
 * The channels a caller can switch on or off: the three paths of M2A's tri-path retrieval, and
 * `route`, the order in which routing through the active index reached raw nodes.
 */
export type TopChannel = "bm25" | "dense" | "image" | "route";
/** The default: the three direct channels. `route` ranks by route order too (opt-in; see docs/decisions/005). */
export const allChannels: readonly TopChannel[] = Object.freeze(["bm25", "dense", "image"]);

export interface TriPathQuery {
  readonly text: string;
  readonly textVector?: Float32Array;
  readonly imageVector?: Float32Array;
}

export interface TriPathSpaces {
  readonly text: string;
  readonly imageText: string;
  readonly image: string | null;
}

/**
 * Runs every enabled channel over the scope and fuses them by RRF. The image channel is the RRF
 * of its parts (image-derived text by BM25 and by vectors; image vectors for a query image), so
 * images weigh as one channel next to BM25 and dense text. Each hit keeps every part's rank.
 */
export async function retrieveTriPath(
  store: ScopedStore,
  query: TriPathQuery,
  options: {
    readonly spaces: TriPathSpaces;
    readonly channels: readonly TopChannel[];
    readonly filters?: SearchFilters;
    readonly rrfK: number;
    readonly perChannel: number;
  },
): Promise<{ fused: Fused[]; channelsUsed: ChannelName[]; lists: Partial<Record<ChannelName, Ranked[]>> }> {
  const search = { limit: options.perChannel, filters: options.filters };
  const enabled = new Set(options.channels);
  const rrf = { k: options.rrfK, perChannel: options.perChannel };
  const lists: Partial<Record<ChannelName, Ranked[]>> = {};
  const imageLists: Partial<Record<ChannelName, Ranked[]>> = {};
  // Every channel's search is started before any is awaited: independent, so a store that answers
  // each on its own connection (Postgres) runs them concurrently. Lists keep the channels' order.
  const none = Promise.resolve(undefined);
  const [bm25, dense, imageText, imageTextDense, imageVector] = await Promise.all([
    query.text && enabled.has("bm25") ? store.searchLexical("text", query.text, search) : none,
    query.textVector && enabled.has("dense")
      ? store.searchVectors(options.spaces.text, query.textVector, search)
      : none,
    enabled.has("image") && query.text ? store.searchLexical("imageText", query.text, search) : none,
    enabled.has("image") && query.textVector
      ? store.searchVectors(options.spaces.imageText, query.textVector, search)
      : none,
    enabled.has("image") && query.imageVector && options.spaces.image
      ? store.searchVectors(options.spaces.image, query.imageVector, search)
      : none,
  ]);
  if (bm25) lists.bm25 = bm25;
  if (dense) lists.dense = dense;
  if (imageText) imageLists.imageText = imageText;
  if (imageTextDense) imageLists.imageTextDense = imageTextDense;
  if (imageVector) imageLists.imageVector = imageVector;
  const imageFused = fuseRrf(imageLists, rrf);
  if (Object.keys(imageLists).length > 0) lists.image = imageFused.map((hit) => ({ id: hit.id, score: hit.score }));
  const imageParts = new Map(imageFused.map((hit) => [hit.id, hit.channels]));
  const fused = fuseRrf(lists, rrf).map((hit) => ({
    ...hit,
    channels: { ...hit.channels, ...imageParts.get(hit.id) },
  }));
  return { fused, channelsUsed: [...channelsOf(lists), ...channelsOf(imageLists)], lists };
}
