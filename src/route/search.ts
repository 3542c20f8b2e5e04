import { relevanceTerms, termCoverage } from "../channels/relevance.ts";
import type { ChannelName, Fused } from "../channels/rrf.ts";
import { allChannels, retrieveTriPath, type TopChannel } from "../channels/tri-path.ts";
import { InputError } from "../core/errors.ts";
import { parseRfc3339, rfc3339Reason } from "../core/time.ts";
import { assemblePack } from "../evidence/assemble-pack.ts";
import type { Budget } from "../evidence/budget.ts";
import type { EvidencePack } from "../evidence/evidence-pack.ts";
import type { RouteConfig } from "../evidence/route-trace.ts";
import { intakeImage } from "../ingest/image-intake.ts";
import type { IngestLimits } from "../ingest/limits.ts";
import type { ImageInput } from "../ingest/session-input.ts";
import type { EmbeddingCache } from "../models/embedding-cache.ts";
import { embedImages, embedTexts } from "../models/model-calls.ts";
import type { Models } from "../models/provider.ts";
import type { VectorSpaces } from "../models/vector-spaces.ts";
import type { IndexEntry, IndexState } from "../store/index-records.ts";
import type { RawNode, SearchFilters } from "../store/records.ts";
import type { ScopedStore } from "../store/store.ts";
import { latestFirstWithinChains } from "./pack-order.ts";
import { latestFirst, retrieveRouted } from "./routed-search.ts";
import type { LinkedEntries, Route } from "./router.ts";
import type { SearchConfig, SearchMode } from "./search-config.ts";

export interface SearchQuery {
  readonly text?: string;
  /** Query image, as bytes or base64 (`{ data }`); finds similar images through the image vector channel. */
  readonly image?: Extract<ImageInput, { data: unknown }>;
}

export interface SearchOptions {
  readonly budget?: Partial<Budget>;
  /** How to read: through the active index and the direct channels (`cairn`, default), the index only, or the direct channels only. */
  readonly mode?: SearchMode;
  /** Routing settings for this search (γ, λ, entries per query, linked entries per entry). */
  readonly routing?: Partial<RouteConfig>;
  /** Channels to use (default all three): e.g. `["bm25"]` for lexical search only. */
  readonly channels?: readonly TopChannel[];
  /**
   * Whether the reader of the pack sees pixels (default true). With `false`, images arrive as their
   * captions and OCR text, charged to the text-token budget instead of the image budget.
   */
  readonly vision?: boolean;
  /**
   * Leave out evidence holding less than this share (0–1) of the query's content words; the pack
   * says `noRelevantEvidence` when nothing is left. Default `SearchConfig.minScore` (0: keep all; 0.2 is the measured suggestion).
   */
  readonly minScore?: number;
  readonly filters?: {
    /** Session keys (the caller's own ids). */
    readonly sessions?: readonly string[];
    readonly from?: string;
    readonly to?: string;
    readonly speakers?: readonly string[];
  };
}

export interface SearchContext {
  readonly models: Models;
  readonly spaces: VectorSpaces;
  readonly budget: Budget;
  readonly config: SearchConfig;
  readonly limits: IngestLimits;
  readonly queryEmbeddings: EmbeddingCache;
  /**
   * The scope's active entries and where its linked entries come from, from an index built if the
   * store needs it (the caller caches both until the index changes).
   */
  readonly routingIndex: (
    scoped: ScopedStore,
  ) => Promise<{ readonly active: readonly IndexEntry[]; readonly linked: LinkedEntries }>;
}

/** Embedded query: what every mode reads with. */
interface PreparedQuery {
  readonly text: string;
  readonly textVector: Float32Array | undefined;
  readonly image: { readonly hash: string; readonly vector: Float32Array | null } | null;
}

/** What a retrieval hands the packer: candidates in admission order and their raw nodes. */
interface Retrieved {
  readonly ordered: readonly Fused[];
  readonly nodes: ReadonlyMap<string, RawNode>;
  readonly channelsUsed: readonly ChannelName[];
  readonly route: Route | null;
}

/**
 * The read pipeline: embed the query, retrieve candidates (through the active index and the
 * direct channels, the index alone, or the channels alone), pack them under the joint budget, and
 * report what was used, cut and why. `index` reads through another index than the stored one: the
 * harness compares maintenance policies over the same raw nodes this way.
 */
export async function search(
  scoped: ScopedStore,
  query: string | SearchQuery,
  options: SearchOptions,
  context: SearchContext,
  index?: IndexState,
): Promise<EvidencePack> {
  const started = performance.now();
  const { text, image } = typeof query === "string" ? { text: query, image: undefined } : query;
  const queryText = text?.trim() ?? "";
  if (!queryText && !image) throw new InputError("query", "give query text, a query image, or both");
  if (queryText.length > context.limits.maxTextChars)
    throw new InputError("query.text", `must be at most ${context.limits.maxTextChars} characters`);
  const budget = validateBudget({ ...context.budget, ...options.budget });
  const filters = toFilters(options.filters);
  const mode = options.mode ?? context.config.mode;
  // A compiled search reads the question bank first (compile/), and comes here only to fall back.
  if (mode === "compiled")
    throw new InputError("mode", "compiled search runs through Memory.search, not the read pipeline");
  const channels = options.channels ?? allChannels;
  const minScore = options.minScore ?? context.config.minScore;
  if (typeof minScore !== "number" || !(minScore >= 0 && minScore <= 1))
    throw new InputError("minScore", "must be a number from 0 to 1");
  const warnings: string[] = [];

  const embedStarted = performance.now();
  const prepared = await embedQuery(scoped.scope.tenant, { text: queryText, image }, mode, channels, context, warnings);
  const embedMs = performance.now() - embedStarted;

  const searchStarted = performance.now();
  const retrieved =
    mode === "tri-path"
      ? await retrieveDirect(scoped, prepared, channels, filters, context, budget)
      : await retrieveThroughIndex(scoped, prepared, { mode, options, channels, filters, budget, context, index });
  const relevant = cutByRelevance(retrieved, prepared.text, minScore);
  const packed = pack(relevant.retrieved, budget, options.vision ?? true);
  const items = packed.items.map((item) => ({ ...item, relevance: relevant.scores.get(item.rawNodeId) ?? null }));
  const used = packed.used;
  const searchMs = performance.now() - searchStarted;
  const cuts = Object.entries(used.cut).filter(([, count]) => count > 0);
  if (cuts.length > 0) {
    warnings.push(
      `budget cut ${cuts.map(([dimension, count]) => `${count} by ${dimension}`).join(", ")} (see budget.cutItems)`,
    );
  }
  const noRelevantEvidence = items.length === 0;
  if (noRelevantEvidence) {
    warnings.push(
      relevant.cut > 0
        ? `no relevant evidence: the best of ${relevant.cut} candidates holds ${round2(relevant.best ?? 0)} of the query's words, below minScore ${minScore}`
        : "no relevant evidence: nothing in this scope matched the query",
    );
  }
  const { route } = retrieved;
  return {
    query: { text: prepared.text || null, image: prepared.image ? { hash: prepared.image.hash } : null },
    mode,
    items,
    budget: used,
    channelsUsed: retrieved.channelsUsed,
    ...(route ? { route: { ...route.trace, selected: items.length } } : {}),
    noRelevantEvidence,
    ...(relevant.terms > 0 ? { relevance: { minScore, best: relevant.best, cut: relevant.cut } } : {}),
    warnings,
    timings: { embedMs, searchMs, totalMs: performance.now() - started },
  };
}

/** Embeds only for what uses vectors: BM25 alone needs no model call; routing compares vectors. */
/** `tenant` partitions the query-embedding cache (see `EmbeddingCache`). */
async function embedQuery(
  tenant: string,
  query: { readonly text: string; readonly image: SearchQuery["image"] },
  mode: SearchMode,
  channels: readonly TopChannel[],
  context: SearchContext,
  warnings: string[],
): Promise<PreparedQuery> {
  const { models, queryEmbeddings } = context;
  const needsTextVector = channels.includes("dense") || channels.includes("image") || mode !== "tri-path";
  const textVector =
    query.text && needsTextVector
      ? await queryEmbeddings.get(tenant, query.text, async (text) => (await embedTexts(models.text, [text]))[0])
      : undefined;
  if (!query.image) return { text: query.text, textVector, image: null };
  const accepted = await intakeImage(query.image, "query.image", { limits: context.limits });
  const embedder = channels.includes("image") ? models.image : undefined;
  if (!channels.includes("image")) warnings.push("the query image was not used: the image channel is off");
  else if (!embedder)
    warnings.push(`the ${models.profile} profile has no image embedder: the query image was not used`);
  const vector = embedder
    ? ((await queryEmbeddings.get(
        tenant,
        `image:${embedder.id}:${accepted.hash}`,
        async () => (await embedImages(embedder, [accepted.data]))[0],
      )) ?? null)
    : null;
  return { text: query.text, textVector, image: { hash: accepted.hash, vector } };
}

function channelSpaces(spaces: VectorSpaces) {
  return { text: spaces.text.name, imageText: spaces.imageText.name, image: spaces.image?.name ?? null };
}

/** M2A's tri-path: the direct channels over every raw node of the scope, fused by RRF. */
async function retrieveDirect(
  scoped: ScopedStore,
  query: PreparedQuery,
  channels: readonly TopChannel[],
  filters: SearchFilters | undefined,
  context: SearchContext,
  budget: Budget,
): Promise<Retrieved> {
  const direct = await retrieveTriPath(
    scoped,
    { text: query.text, textVector: query.textVector, imageVector: query.image?.vector ?? undefined },
    {
      spaces: channelSpaces(context.spaces),
      channels,
      filters,
      rrfK: context.config.rrfK,
      perChannel: channelDepth(context.config, budget),
    },
  );
  const nodes = await scoped.readRawNodes({ ids: direct.fused.map((hit) => hit.id) });
  return {
    ordered: direct.fused,
    nodes: new Map(nodes.map((node) => [node.id, node])),
    channelsUsed: direct.channelsUsed,
    route: null,
  };
}

/** C3M BMER through the stored index (or the one given), joined by the direct channels in `cairn` mode. */
async function retrieveThroughIndex(
  scoped: ScopedStore,
  query: PreparedQuery,
  read: {
    readonly mode: Exclude<SearchMode, "tri-path" | "compiled">;
    readonly options: SearchOptions;
    readonly channels: readonly TopChannel[];
    readonly filters: SearchFilters | undefined;
    readonly budget: Budget;
    readonly context: SearchContext;
    readonly index: IndexState | undefined;
  },
): Promise<Retrieved> {
  const { context, index } = read;
  const stored = index ? undefined : await context.routingIndex(scoped);
  const routed = await retrieveRouted(
    scoped,
    { text: query.text, textVector: query.textVector, imageVector: query.image?.vector ?? undefined },
    {
      mode: read.mode,
      active: index ? [...index.entries.values()].filter((entry) => entry.status === "active") : (stored?.active ?? []),
      linked: index ? linkedFrom(index) : stored?.linked,
      spaces: channelSpaces(context.spaces),
      channels: read.channels,
      filters: read.filters,
      rrfK: context.config.rrfK,
      perChannel: channelDepth(context.config, read.budget),
      routing: { ...context.config.routing, ...read.options.routing },
      pageBeam: read.budget.pages,
      budgetRawNodes: read.budget.rawNodes,
    },
  );
  return routed;
}

/**
 * How many candidates each channel offers: the configured `perChannel` (M2A's ten), but never fewer than the
 * budget's raw nodes, so that a single channel can fill the pack it is asked for (a 12-node budget read by BM25
 * alone used to get 10 items while fused reads got 12).
 */
export function channelDepth(config: Pick<SearchConfig, "perChannel">, budget: Pick<Budget, "rawNodes">): number {
  return Math.max(config.perChannel, budget.rawNodes);
}

/** Packs under the budget; a routed pack charges the pages routing read and puts latest states first. */
function pack(retrieved: Retrieved, budget: Budget, vision: boolean) {
  const packed = assemblePack(retrieved.ordered, retrieved.nodes, budget, { vision });
  const { route } = retrieved;
  if (!route) return { items: packed.items, used: packed.budget };
  const used = {
    ...packed.budget,
    used: { ...packed.budget.used, pages: route.pagesRead },
    cut: { ...packed.budget.cut, pages: route.pagesCut },
  };
  const order = route.trace.config.order === "latest-first" ? latestFirst : latestFirstWithinChains;
  const items = order(packed.items, (item) => item.rawNodeId, route).map((item) => {
    const via = route.nodes.get(item.rawNodeId);
    return via ? { ...item, route: { entry: via.entry, via: via.via, latest: via.latest } } : item;
  });
  return { items, used };
}

/**
 * Scores every candidate's relevance (the share of the query's words it holds, over its text, speaker
 * and image-derived text) and leaves out those below `minScore` before packing, so weak hits spend no
 * budget. A query without words (an image alone) has no relevance: nothing is cut.
 */
function cutByRelevance(retrieved: Retrieved, queryText: string, minScore: number) {
  const terms = relevanceTerms(queryText);
  const scores = new Map<string, number>();
  if (terms.length === 0) return { retrieved, scores, terms: 0, best: null, cut: 0 };
  let best: number | null = null;
  const kept = retrieved.ordered.filter((hit) => {
    const node = retrieved.nodes.get(hit.id);
    if (!node) return false;
    const text = [node.speaker, node.text, ...node.images.flatMap((image) => [image.caption, image.derivedText])]
      .filter(Boolean)
      .join(" ");
    const score = termCoverage(terms, text) ?? 0;
    scores.set(hit.id, score);
    best = Math.max(best ?? 0, score);
    return score >= minScore;
  });
  return {
    retrieved: { ...retrieved, ordered: kept },
    scores,
    terms: terms.length,
    best,
    cut: scores.size - kept.length,
  };
}

const round2 = (value: number) => Math.round(value * 100) / 100;

/** Linked entries read from an index held in memory (the harness's replayed baselines). */
function linkedFrom(index: IndexState): LinkedEntries {
  return async ({ hosts, ids }) => {
    const hostSet = new Set(hosts);
    const idSet = new Set(ids);
    return [...index.entries.values()].filter(
      (entry) => (entry.host && hostSet.has(entry.host)) || idSet.has(entry.id),
    );
  };
}

export function validateBudget(budget: Budget): Budget {
  for (const [dimension, value] of Object.entries(budget)) {
    if (!Number.isInteger(value) || value < 0)
      throw new InputError(`budget.${dimension}`, "must be a non-negative integer");
  }
  return Object.freeze(budget);
}

function toFilters(filters: SearchOptions["filters"]): SearchFilters | undefined {
  if (!filters) return undefined;
  const time = (field: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    const ms = typeof value === "string" ? parseRfc3339(value) : null;
    if (ms === null) throw new InputError(`filters.${field}`, rfc3339Reason);
    return ms;
  };
  return {
    sessionKeys: filters.sessions,
    timeFromMs: time("from", filters.from),
    timeToMs: time("to", filters.to),
    speakers: filters.speakers,
  };
}
