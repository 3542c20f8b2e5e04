import { type ChannelName, type Fused, fuseRrf } from "../channels/rrf.ts";
import { retrieveTriPath, type TopChannel, type TriPathSpaces } from "../channels/tri-path.ts";
import type { IndexEntry } from "../index/types.ts";
import { cosine } from "../index/vectors.ts";
import type { Ranked, RawNode, SearchFilters } from "../store/records.ts";
import type { ScopedStore } from "../store/store.ts";
import { type LinkedEntries, type Route, type RouteConfig, routeQuery } from "./router.ts";
import { type CoverageKey, orderWithCoverage } from "./select.ts";

export interface RoutedRetrieval {
  /** Candidates in the order the budget packer admits them (relevance + λ·coverage). */
  readonly ordered: readonly Fused[];
  readonly nodes: ReadonlyMap<string, RawNode>;
  readonly route: Route;
  readonly channelsUsed: readonly ChannelName[];
}

/**
 * Reads through the active index: routes the query to pages and entries, expands them to raw
 * nodes, and ranks that candidate set by RRF over lexical, dense, image and route order. In
 * `cairn` mode the direct channels' own top hits over all raw nodes join the candidate set, so a
 * routing miss can still be recovered; in `route` mode only what routing reached is read.
 */
export async function retrieveRouted(
  store: ScopedStore,
  query: { readonly text: string; readonly textVector?: Float32Array; readonly imageVector?: Float32Array },
  options: {
    readonly mode: "cairn" | "route";
    readonly active: readonly IndexEntry[];
    readonly spaces: TriPathSpaces;
    readonly channels: readonly TopChannel[];
    readonly filters?: SearchFilters;
    readonly rrfK: number;
    readonly perChannel: number;
    readonly routing: RouteConfig;
    readonly pageBeam: number;
    /** Where linked entries come from (default: the store's index). */
    readonly linked?: LinkedEntries;
  },
): Promise<RoutedRetrieval> {
  const route = await routeQuery(
    { text: query.text, vector: query.textVector, imageVector: query.imageVector },
    options.active,
    options.linked ?? ((linked) => store.readLinkedEntries(linked)),
    { config: options.routing, pageBeam: options.pageBeam },
  );
  const direct =
    options.mode === "cairn"
      ? await retrieveTriPath(store, query, {
          spaces: options.spaces,
          channels: options.channels,
          filters: options.filters,
          rrfK: options.rrfK,
          perChannel: options.perChannel,
        })
      : null;

  const poolIds = [...new Set([...route.nodes.keys(), ...(direct?.fused.map((hit) => hit.id) ?? [])])];
  const nodes = new Map(
    (await store.getRawNodes(poolIds))
      .filter((node) => matchesFilters(node, options.filters))
      .map((node) => [node.id, node]),
  );
  const pool = poolIds.filter((id) => nodes.has(id));
  const enabled = new Set(options.channels);
  const search = { limit: options.perChannel, filters: options.filters, within: pool };
  const lists: Partial<Record<ChannelName, Ranked[]>> = {};

  if (query.text && enabled.has("bm25")) lists.bm25 = await store.searchLexical("text", query.text, search);
  const similarity = new Map<string, number>();
  if (query.textVector && enabled.has("dense")) {
    const vectors = await store.getTextVectors(options.spaces.text, pool);
    for (const [id, vector] of vectors) similarity.set(id, cosine(query.textVector, vector));
    lists.dense = [...similarity.entries()]
      .map(([id, score]) => ({ id, score }))
      .sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
  }
  if (enabled.has("image")) {
    const within = new Set(pool);
    if (direct) {
      lists.image = direct.lists.image?.filter((hit) => within.has(hit.id));
    } else {
      const parts: Partial<Record<ChannelName, Ranked[]>> = {};
      if (query.text) parts.imageText = await store.searchLexical("imageText", query.text, search);
      if (query.imageVector && options.spaces.image)
        parts.imageVector = await imageSimilarity(store, query.imageVector, options.spaces.image, [...nodes.values()]);
      const fusedImage = fuseRrf(parts, { k: options.rrfK, perChannel: options.perChannel });
      if (fusedImage.length > 0) lists.image = fusedImage.map((hit) => ({ id: hit.id, score: hit.score }));
    }
  }
  const routed = pool.filter((id) => route.nodes.has(id));
  if (routed.length > 0 && enabled.has("route")) {
    lists.route = routed
      .map((id) => ({ id, score: route.nodes.get(id)?.score ?? 0, tie: similarity.get(id) ?? 0 }))
      .sort((a, b) => b.score - a.score || b.tie - a.tie || a.id.localeCompare(b.id))
      .map(({ id, score }) => ({ id, score }));
  }
  for (const [name, list] of Object.entries(lists)) if (!list || list.length === 0) delete lists[name as ChannelName];

  const imageParts = new Map(direct?.fused.map((hit) => [hit.id, hit.channels]) ?? []);
  const fused = fuseRrf(lists, { k: options.rrfK, perChannel: options.perChannel }).map((hit) => ({
    ...hit,
    channels: { ...pickImageParts(imageParts.get(hit.id)), ...hit.channels },
  }));
  const keys = new Map<string, CoverageKey>();
  for (const hit of fused) {
    const node = nodes.get(hit.id);
    if (!node) continue;
    keys.set(hit.id, {
      session: node.sessionKey,
      cluster: route.nodes.get(hit.id)?.entry ?? `session:${node.sessionKey}`,
    });
  }
  return {
    ordered: orderWithCoverage(fused, keys, options.routing.lambda),
    nodes,
    route,
    channelsUsed: Object.keys(lists) as ChannelName[],
  };
}

/** Raw nodes ranked by their best image's similarity to the query image. */
async function imageSimilarity(
  store: ScopedStore,
  queryVector: Float32Array,
  space: string,
  nodes: readonly RawNode[],
): Promise<Ranked[]> {
  const hashes = [
    ...new Set(nodes.flatMap((node) => node.images.flatMap((image) => (image.hash ? [image.hash] : [])))),
  ];
  const known = await store.knownImages(hashes, space);
  return nodes
    .flatMap((node) => {
      const scores = node.images.flatMap((image) => {
        const vector = image.hash ? known.get(image.hash)?.vector : null;
        return vector ? [cosine(queryVector, vector)] : [];
      });
      return scores.length > 0 ? [{ id: node.id, score: Math.max(...scores) }] : [];
    })
    .sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
}

function pickImageParts(channels: Fused["channels"] | undefined): Fused["channels"] {
  if (!channels) return {};
  const { imageText, imageTextDense, imageVector } = channels;
  return {
    ...(imageText ? { imageText } : {}),
    ...(imageTextDense ? { imageTextDense } : {}),
    ...(imageVector ? { imageVector } : {}),
  };
}

export function matchesFilters(node: RawNode, filters: SearchFilters | undefined): boolean {
  if (!filters) return true;
  const time = Date.parse(node.time);
  if (filters.sessionKeys?.length && !filters.sessionKeys.includes(node.sessionKey)) return false;
  if (filters.timeFromMs !== undefined && time < filters.timeFromMs) return false;
  if (filters.timeToMs !== undefined && time > filters.timeToMs) return false;
  if (filters.speakers?.length && !filters.speakers.includes(node.speaker ?? "")) return false;
  return true;
}
