import { relevanceTerms, termCoverage } from "../channels/relevance.ts";
import { type ChannelName, channelLists, channelsOf, type Fused, fuseRrf } from "../channels/rrf.ts";
import { retrieveTriPath, type TopChannel, type TriPathSpaces } from "../channels/tri-path.ts";
import type { Ranked } from "../core/ranked.ts";
import { cosine } from "../core/vectors.ts";
import type { RouteConfig } from "../evidence/route-trace.ts";
import type { IndexEntry } from "../store/index-records.ts";
import type { RawNode, SearchFilters } from "../store/records.ts";
import type { ScopedStore } from "../store/store.ts";
import { focusRerank, fuseFeedback } from "./focus-rerank.ts";
import { asksAboutImages } from "./query-intent.ts";
import { asksForSeveral, feedbackTerms, namedSpeakers } from "./question-focus.ts";
import { questionTimeWindows } from "./question-time.ts";
import { type LinkedEntries, type Route, routeQuery } from "./router.ts";
import { type CoverageKey, orderWithCoverage } from "./select.ts";

/** How deep the one lexical pass goes: enough to score routed candidates; a 1,000-deep pass gave the same recall (f9ebfe9). */
const lexicalDepth = 100;
/**
 * When raw nodes are read after ranking, how far down: the packer skips candidates whose text
 * does not fit, so it may reach past the budget's raw nodes. Four times the budget, and at least
 * 48 (four times the default 12); set in f9ebfe9, not measured.
 */
const readAheadPerBudgetNode = 4;
const minReadAhead = 48;

export interface RoutedRetrieval {
  /** Candidates in the order the budget packer admits them (relevance + λ·coverage). */
  readonly ordered: readonly Fused[];
  readonly nodes: ReadonlyMap<string, RawNode>;
  readonly route: Route;
  readonly channelsUsed: readonly ChannelName[];
}

export interface RoutedQuery {
  readonly text: string;
  readonly textVector?: Float32Array;
  readonly imageVector?: Float32Array;
}

export interface RoutedSearchOptions {
  readonly mode: "cairn" | "route";
  readonly active: readonly IndexEntry[];
  readonly spaces: TriPathSpaces;
  readonly channels: readonly TopChannel[];
  readonly filters?: SearchFilters;
  readonly rrfK: number;
  readonly perChannel: number;
  readonly routing: RouteConfig;
  readonly pageBeam: number;
  /** The budget's raw nodes: how far down the ranking the packer can reach. */
  readonly budgetRawNodes: number;
  /** Where linked entries come from (default: the store's index). */
  readonly linked?: LinkedEntries;
}

/**
 * Reads through the active index: routes the query to pages and entries, expands them to raw
 * nodes, and ranks that candidate set by RRF over lexical, dense, image and route order. In
 * `cairn` mode the direct channels' own top hits over all raw nodes join the candidate set, so a
 * routing miss can still be recovered; in `route` mode only what routing reached is read.
 */
export async function retrieveRouted(
  store: ScopedStore,
  query: RoutedQuery,
  options: RoutedSearchOptions,
): Promise<RoutedRetrieval> {
  const route = await routeQuery(
    { text: query.text, vector: query.textVector, imageVector: query.imageVector },
    options.active,
    options.linked ?? ((linked) => store.readLinkedEntries(linked)),
    {
      config: options.routing,
      pageBeam: options.pageBeam,
      neighbours: (ids, window) => neighboursOf(store, ids, window),
    },
  );
  const enabled = new Set(options.channels);
  const passes = await directPasses(store, query, options, enabled);
  const poolIds = [...new Set([...route.nodes.keys(), ...(options.mode === "cairn" ? passes.directIds : [])])];
  // Raw nodes are read in full only where ranking needs their fields (filters, coverage, query-image
  // similarity); otherwise only the best candidates the packer can reach are read, after ranking.
  const readAll = Boolean(options.filters) || options.routing.lambda > 0 || (!passes.direct && !!query.imageVector);
  let nodes = new Map<string, RawNode>();
  if (readAll) {
    for (const node of await store.readRawNodes({ ids: poolIds }))
      if (matchesFilters(node, options.filters)) nodes.set(node.id, node);
  }
  const pool = readAll ? poolIds.filter((id) => nodes.has(id)) : poolIds;
  const lists = await candidateLists(store, query, options, { enabled, passes, pool, nodes, route });
  const weights = { image: asksAboutImages(query.text, Boolean(query.imageVector)) ? 1 : options.routing.imageWeight };
  const reach = Math.max(minReadAhead, readAheadPerBudgetNode * options.budgetRawNodes);
  let fused = fuseCandidates(lists, passes.direct, options, weights);
  if (!readAll) {
    nodes = new Map(
      (await store.readRawNodes({ ids: fused.slice(0, reach).map((hit) => hit.id) })).map((node) => [node.id, node]),
    );
  }
  fused = await understandQuestion(store, query.text, { fused, nodes, reach, options });
  return {
    ordered: orderWithCoverage(fused, coverageKeys(fused, nodes, route), options.routing.lambda),
    nodes,
    route,
    channelsUsed: channelsOf(lists),
  };
}

/** How many of the first pass's best items seed the feedback pass, and how many terms it adds. */
const feedbackSeeds = 3;
const feedbackTermCount = 5;

/**
 * Query understanding over the fused candidates (decision 024): the session, time-window and speaker
 * re-rank, then a feedback pass for questions that ask for several pieces of evidence. Reads the
 * raw nodes a feedback pass brings in (into `nodes`); with every weight at 0 it reads nothing.
 */
async function understandQuestion(
  store: ScopedStore,
  question: string,
  read: {
    readonly fused: Fused[];
    readonly nodes: Map<string, RawNode>;
    readonly reach: number;
    readonly options: RoutedSearchOptions;
  },
): Promise<Fused[]> {
  const { nodes, reach, options } = read;
  const config = options.routing;
  let fused = read.fused;
  if (!question) return fused;
  const present = () => new Set(fused.slice(0, reach).flatMap((hit) => nodes.get(hit.id)?.speaker ?? []));
  const useTime = config.timeWeight > 0;
  const useSpeaker = config.speakerWeight > 0;
  // The re-rank first, on the fused scores' own scale; the feedback pass then fuses by rank, seeded
  // by the re-ranked best items (re-ranking RRF sums instead would let the added weights swamp them).
  if (config.sessionWeight > 0 || useTime || useSpeaker) {
    const focus = {
      windows: useTime ? questionTimeWindows(question, latestTime(options.active, fused.slice(0, reach), nodes)) : [],
      speakers: useSpeaker ? namedSpeakers(question, present()) : new Set<string>(),
    };
    const weights = {
      session: config.sessionWeight,
      time: config.timeWeight,
      speaker: config.speakerWeight,
      slackMs: config.timeSlackDays * 86_400_000,
    };
    fused = focusRerank(fused, nodes, focus, weights, reach);
  }
  if (config.feedbackWeight > 0 && (config.feedbackFor === "all" || asksForSeveral(question))) {
    // Seeds: the best items that hold a word of the question; a top item that matched on its vector
    // alone would seed the pass with its own, unrelated topic.
    const asked = relevanceTerms(question);
    const seeds = fused
      .slice(0, feedbackSeeds)
      .flatMap((hit) => nodes.get(hit.id)?.text ?? [])
      .filter((text) => asked.length === 0 || (termCoverage(asked, text) ?? 0) > 0);
    const terms = feedbackTerms(question, seeds, { max: feedbackTermCount, exclude: present() });
    if (terms.length > 0) {
      const feedback = await store.searchLexical("text", `${question} ${terms.join(" ")}`, {
        limit: reach,
        filters: options.filters,
      });
      fused = fuseFeedback(fused, feedback, config.feedbackWeight, options.rrfK);
      const missing = fused.slice(0, reach).filter((hit) => !nodes.has(hit.id));
      if (missing.length > 0) {
        for (const node of await store.readRawNodes({ ids: missing.map((hit) => hit.id) }))
          if (matchesFilters(node, options.filters)) nodes.set(node.id, node);
      }
    }
  }
  return fused;
}

/**
 * "Now" for a question's relative times: the scope's latest session time, read off the active
 * entries' time spans (the newest session is always in the index), or the latest candidate's time.
 */
function latestTime(
  active: readonly IndexEntry[],
  candidates: readonly Fused[],
  nodes: ReadonlyMap<string, RawNode>,
): number | null {
  let latest = Number.NEGATIVE_INFINITY;
  for (const entry of active) latest = Math.max(latest, entry.timeEndMs);
  for (const hit of candidates) {
    const node = nodes.get(hit.id);
    if (node) latest = Math.max(latest, Date.parse(node.time));
  }
  return Number.isFinite(latest) ? latest : null;
}

interface DirectPasses {
  /** One lexical pass over all raw nodes, deep enough to score routed candidates too. */
  readonly lexical: readonly Ranked[];
  /** The dense channel's own top hits (an ANN pass `perChannel` deep); the candidate set is scored exactly later. */
  readonly dense: readonly Ranked[];
  /** In `cairn` mode, the direct image channel over all raw nodes. */
  readonly direct: { fused: Fused[]; lists: Partial<Record<ChannelName, Ranked[]>> } | null;
  /** The direct channels' own top hits, which join the candidate set in `cairn` mode. */
  readonly directIds: readonly string[];
}

async function directPasses(
  store: ScopedStore,
  query: RoutedQuery,
  options: RoutedSearchOptions,
  enabled: ReadonlySet<TopChannel>,
): Promise<DirectPasses> {
  // The three passes are independent: started together, so a store that answers each on its own
  // connection (Postgres) runs them concurrently instead of one round trip after another.
  // One lexical pass, deep enough to score the routed candidates too: its top `perChannel` are the
  // direct BM25 hits, and candidates below its depth get no lexical score.
  const lexicalPass =
    query.text && enabled.has("bm25")
      ? store.searchLexical("text", query.text, { limit: lexicalDepth, filters: options.filters })
      : Promise.resolve([]);
  // The dense pass only finds the channel's own top hits: every candidate (routed or direct) is
  // then scored exactly from its stored vector, so no candidate lacks a dense score and the ANN
  // pass costs what k needs, not what ranking a few hundred candidates needs (decision 015).
  const densePass =
    query.textVector && enabled.has("dense")
      ? store.searchVectors(options.spaces.text, query.textVector, {
          limit: options.perChannel,
          filters: options.filters,
        })
      : Promise.resolve([]);
  const directPass =
    options.mode === "cairn"
      ? retrieveTriPath(store, query, {
          spaces: options.spaces,
          channels: options.channels.filter((channel) => channel === "image"),
          filters: options.filters,
          rrfK: options.rrfK,
          perChannel: options.perChannel,
        })
      : Promise.resolve(null);
  const [lexical, dense, direct] = await Promise.all([lexicalPass, densePass, directPass]);
  const directIds = [
    ...lexical.slice(0, options.perChannel).map((hit) => hit.id),
    ...dense.slice(0, options.perChannel).map((hit) => hit.id),
    ...(direct?.fused.map((hit) => hit.id) ?? []),
  ];
  return { lexical, dense, direct, directIds };
}

/** Each enabled channel's ranking of the candidate pool; channels with nothing to say are left out. */
async function candidateLists(
  store: ScopedStore,
  query: RoutedQuery,
  options: RoutedSearchOptions,
  candidates: {
    readonly enabled: ReadonlySet<TopChannel>;
    readonly passes: DirectPasses;
    readonly pool: readonly string[];
    readonly nodes: ReadonlyMap<string, RawNode>;
    readonly route: Route;
  },
): Promise<Partial<Record<ChannelName, Ranked[]>>> {
  const { enabled, passes, pool, nodes, route } = candidates;
  const { lexical, dense, direct } = passes;
  const within = new Set(pool);
  const lists: Partial<Record<ChannelName, Ranked[]>> = {};

  if (lexical.length > 0) lists.bm25 = lexical.filter((hit) => within.has(hit.id));
  if (query.textVector && enabled.has("dense")) {
    const scored = await exactDense(store, options.spaces.text, query.textVector, pool, dense);
    if (scored.length > 0) lists.dense = scored;
  }
  if (enabled.has("image")) {
    if (direct) {
      lists.image = direct.lists.image?.filter((hit) => within.has(hit.id));
    } else {
      const parts: Partial<Record<ChannelName, Ranked[]>> = {};
      if (query.text) {
        parts.imageText = (
          await store.searchLexical("imageText", query.text, { limit: lexicalDepth, filters: options.filters })
        ).filter((hit) => within.has(hit.id));
      }
      if (query.imageVector && options.spaces.image)
        parts.imageVector = await imageSimilarity(store, query.imageVector, options.spaces.image, [...nodes.values()]);
      const fusedImage = fuseRrf(parts, { k: options.rrfK, perChannel: options.perChannel });
      if (fusedImage.length > 0) lists.image = fusedImage.map((hit) => ({ id: hit.id, score: hit.score }));
    }
  }
  const routed = pool.filter((id) => route.nodes.has(id));
  if (routed.length > 0 && enabled.has("route")) {
    lists.route = routeOrder(
      routed,
      route,
      // Only the text channels that produced a list: with BM25 off (or silent), route order ties break by dense alone.
      fuseRrf(
        {
          ...(lists.bm25 ? { bm25: lists.bm25 } : {}),
          ...(lists.dense ? { dense: lists.dense } : {}),
        },
        { k: options.rrfK, perChannel: pool.length },
      ),
    );
  }
  for (const name of channelsOf(lists)) if (!lists[name]?.length) delete lists[name];
  return lists;
}

/**
 * Every candidate's cosine similarity to the query from its stored vector, best first (ties by
 * id). The dense pass's own hits keep the score the ANN index gave them (f32, the same cosine);
 * only the rest are read. Candidates with no stored vector are left out.
 */
async function exactDense(
  store: ScopedStore,
  space: string,
  vector: Float32Array,
  pool: readonly string[],
  dense: readonly Ranked[],
): Promise<Ranked[]> {
  const known = new Map(dense.map((hit) => [hit.id, hit.score]));
  const missing = pool.filter((id) => !known.has(id));
  const vectors = missing.length > 0 ? await store.readVectors(space, missing) : new Map<string, Float32Array>();
  const scored: Ranked[] = [];
  for (const id of pool) {
    const stored = vectors.get(id);
    const score = known.get(id) ?? (stored ? cosine(vector, stored) : undefined);
    if (score !== undefined) scored.push({ id, score });
  }
  return scored.sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
}

/** The candidates ranked by the configured fusion, each keeping the image channel's parts for the trace. */
function fuseCandidates(
  lists: Partial<Record<ChannelName, Ranked[]>>,
  direct: DirectPasses["direct"],
  options: RoutedSearchOptions,
  weights: Partial<Record<ChannelName, number>>,
): Fused[] {
  const imageParts = new Map(direct?.fused.map((hit) => [hit.id, hit.channels]) ?? []);
  return (
    options.routing.fusion === "sum"
      ? fuseScores(lists, weights)
      : fuseRrf(lists, { k: options.rrfK, perChannel: options.perChannel })
  ).map((hit) => ({
    ...hit,
    channels: { ...pickImageParts(imageParts.get(hit.id)), ...hit.channels },
  }));
}

/** What coverage counts for each read candidate: its session, and the entry routing reached it through. */
function coverageKeys(
  fused: readonly Fused[],
  nodes: ReadonlyMap<string, RawNode>,
  route: Route,
): Map<string, CoverageKey> {
  const keys = new Map<string, CoverageKey>();
  for (const hit of fused) {
    const node = nodes.get(hit.id);
    if (!node) continue;
    keys.set(hit.id, {
      session: node.sessionKey,
      cluster: route.nodes.get(hit.id)?.entry ?? `session:${node.sessionKey}`,
    });
  }
  return keys;
}

/**
 * Orders a pack so that an earlier state never comes before the state that replaced it: an item
 * reached through a version chain is held back until the first item of the chain's latest entry
 * (when the pack holds one). Applied to the selected evidence only, so it changes what the reader
 * sees first, not what is selected.
 */
export function latestFirst<T>(ordered: readonly T[], idOf: (item: T) => string, route: Route): T[] {
  const heads = new Set<string>();
  for (const hit of ordered) {
    const via = route.nodes.get(idOf(hit));
    if (via && via.via !== "earlier-state") heads.add(via.head);
  }
  const out: T[] = [];
  const held = new Map<string, T[]>();
  const placed = new Set<string>();
  for (const hit of ordered) {
    const via = route.nodes.get(idOf(hit));
    if (via?.via === "earlier-state" && heads.has(via.head) && !placed.has(via.head)) {
      held.set(via.head, [...(held.get(via.head) ?? []), hit]);
      continue;
    }
    out.push(hit);
    if (via && via.via !== "earlier-state" && !placed.has(via.head)) {
      placed.add(via.head);
      out.push(...(held.get(via.head) ?? []));
      held.delete(via.head);
    }
  }
  return out;
}

/**
 * Score fusion over the whole candidate set: each list's scores scaled to [0, 1] by its best
 * candidate (negative similarities count as 0), summed with each channel's weight (1 unless `weights`
 * says otherwise), so every candidate is ranked, not only each list's top ten. Ranks are kept per
 * channel for the trace.
 */
function fuseScores(
  lists: Partial<Record<ChannelName, readonly Ranked[]>>,
  weights: Partial<Record<ChannelName, number>> = {},
): Fused[] {
  const total = new Map<string, { score: number; channels: Fused["channels"] }>();
  for (const [channel, list] of channelLists(lists)) {
    const top = Math.max(0, ...list.map((hit) => hit.score));
    const weight = weights[channel] ?? 1;
    list.forEach((hit, index) => {
      const current = total.get(hit.id) ?? { score: 0, channels: {} };
      current.score += top > 0 ? (weight * Math.max(0, hit.score)) / top : 0;
      current.channels = { ...current.channels, [channel]: { rank: index + 1, score: hit.score } };
      total.set(hit.id, current);
    });
  }
  return [...total.entries()]
    .map(([id, hit]) => ({ id, ...hit }))
    .sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
}

/**
 * The route channel's order: entries by route score, and from each entry its raw nodes by what
 * the direct signals say about them, taken round-robin (each entry's best node first, then each
 * entry's second best, ...). One entry's neighbours cannot fill the channel, and a routed entry
 * contributes its most query-like raw node before any entry contributes a second.
 */
function routeOrder(routed: readonly string[], route: Route, withinEntry: readonly Fused[]): Ranked[] {
  const rank = new Map(withinEntry.map((hit, index) => [hit.id, index]));
  const byEntry = new Map<string, { score: number; ids: string[] }>();
  for (const id of routed) {
    const via = route.nodes.get(id);
    if (!via) continue;
    const group = byEntry.get(via.entry) ?? { score: via.score, ids: [] };
    group.ids.push(id);
    byEntry.set(via.entry, group);
  }
  const groups = [...byEntry.entries()]
    .sort(([idA, a], [idB, b]) => b.score - a.score || idA.localeCompare(idB))
    .map(([, group]) => ({
      score: group.score,
      ids: group.ids.sort(
        (a, b) =>
          (rank.get(a) ?? Number.MAX_SAFE_INTEGER) - (rank.get(b) ?? Number.MAX_SAFE_INTEGER) || a.localeCompare(b),
      ),
    }));
  const order: Ranked[] = [];
  for (let round = 0; order.length < routed.length; round++) {
    for (const group of groups) {
      const id = group.ids[round];
      if (id) order.push({ id, score: group.score });
    }
  }
  return order;
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

/**
 * Raw nodes within `window` turns of the given ones in the same session, each mapped to the given
 * node it is nearest (ties: the earlier given), for the router's neighbour window.
 */
async function neighboursOf(store: ScopedStore, ids: readonly string[], window: number): Promise<Map<string, string>> {
  const given = await store.readRawNodes({ ids });
  const out = new Map<string, string>();
  for (const node of await store.readRawNodes({ near: ids, window })) {
    let nearest: RawNode | null = null;
    for (const candidate of given) {
      if (candidate.sessionId !== node.sessionId || Math.abs(candidate.turn - node.turn) > window) continue;
      if (!nearest || Math.abs(candidate.turn - node.turn) < Math.abs(nearest.turn - node.turn)) nearest = candidate;
    }
    if (nearest) out.set(node.id, nearest.id);
  }
  return out;
}
