import { roundForRecord } from "../core/round.ts";
import { contentWords } from "../core/text.ts";
import { cosine } from "../core/vectors.ts";
import type { RouteConfig, RouteTrace, RouteVia } from "../evidence/route-trace.ts";
import { coverVector, type IndexEntry } from "../store/index-records.ts";

/**
 * γ favours pages that bring sessions and relation labels not yet read. λ defaults to 0: with the
 * default budget (12 raw nodes) every coverage weight we measured (0.05, 0.15) lost evidence
 * recall on LoCoMo and Mem-Gallery, so coverage is opt-in (docs/decisions/005). Score fusion ranks
 * every candidate routing reached; RRF only sees each list's top ten.
 */
export const defaultRouteConfig: RouteConfig = Object.freeze({
  /** Set with routing (c11196f); the `c3m-gamma0` harness method measures γ = 0 beside it (BENCHMARKS.md). */
  gamma: 0.2,
  /** Coverage is opt-in: 0.05 and 0.15 both lost recall at the default budget (decision 005). */
  lambda: 0,
  /** With segments of at most 8 raw nodes, up to 64 candidates for a 12-node budget; set in c11196f, not tuned. */
  entries: 8,
  /** Overflow fallbacks and earlier states followed per entry; set in c11196f, not tuned. */
  linked: 4,
  /** Off: a window of 1 gained under half a point (decision 005). */
  window: 0,
  /** Score fusion ranks every routed candidate, RRF only each list's top ten (decision 005). */
  fusion: "sum",
  /** Relevance order, latest state first within a chain's positions (issue 19; BENCHMARKS.md "Pack order"). */
  order: "relevance",
  /** Image evidence on demand: chosen on LoCoMo and Mem-Gallery (BENCHMARKS.md "Image channel on demand"). */
  imageWeight: 0.25,
  /**
   * Query understanding (decision 024; BENCHMARKS.md "Query understanding (q19c)"): the session score is on
   * (0.3, chosen on LoCoMo's first 4 histories and Mem-Gallery's first 3; on all of LoCoMo recall@10 0.684 →
   * 0.715). Off, each for a measured reason: time windows (LCMP State Identification −5.9), feedback
   * (Mem-Gallery TR/VR/VS −1.1 to −1.7 with hash vectors, every dataset but LCMP down with the local ones).
   */
  sessionWeight: 0.3,
  timeWeight: 0,
  timeSlackDays: 14,
  /**
   * A named speaker's turn gains a tenth of the best candidate's score (decision 043): enough to reorder a
   * turn and its neighbour, whose index texts share a gist, not to lift a weak match over a strong one. With
   * the local models, all of LoCoMo recall@10 +1.1 (multi-hop 0.440 → 0.470) at a cost of 2.0 points on
   * adversarial questions, which name the other speaker on purpose; Mem-Gallery +0.3; LCMP unchanged.
   */
  speakerWeight: 0.1,
  feedbackWeight: 0,
  feedbackFor: "several",
  /**
   * 3, as before decision 029, so the default search reads no more than it did: with the direct
   * channels beside routing, 12 levels changed nothing measurable (LoCoMo first 4: recall@10 0.732
   * both). Routing read alone (`mode: "route"`) needs 12: the capacity fallback builds chains and 3
   * levels leave the oldest overflowed segments unreachable (decision 029; `followLinks`).
   */
  linkDepth: 3,
});

export interface RouteQuery {
  readonly text: string;
  readonly vector?: Float32Array;
  readonly imageVector?: Float32Array;
}

export interface RoutedNode {
  readonly entry: string;
  /** The chosen entry the node was reached from (itself, or the entry whose link was followed). */
  readonly head: string;
  readonly score: number;
  readonly via: RouteVia;
  /** True when the node belongs to the latest state of a version chain. */
  readonly latest: boolean;
}

export interface Route {
  readonly nodes: ReadonlyMap<string, RoutedNode>;
  readonly trace: RouteTrace;
  readonly pagesRead: number;
  readonly pagesCut: number;
}

/**
 * Loads entries linked to chosen ones: those hosted by them (with `nearest`, only each host's
 * `perHost` closest to the vector), and their predecessors.
 */
export type LinkedEntries = (options: {
  hosts: readonly string[];
  ids: readonly string[];
  nearest?: { vector: Float32Array; perHost: number };
}) => Promise<IndexEntry[]>;

/**
 * C3M BMER, first half (Eq. 5): score pages by similarity plus γ·coverage gain and read the best
 * `pageBeam` of them; take the best entries on them; expand each to its raw nodes, including the
 * entries reached through its overflow fallbacks and its earlier states. Selection under the
 * budget (Eq. 6–7) happens over the returned candidates.
 */
export async function routeQuery(
  query: RouteQuery,
  active: readonly IndexEntry[],
  linked: LinkedEntries,
  options: {
    readonly config: RouteConfig;
    readonly pageBeam: number;
    /** Raw nodes within `window` turns of the given ones, same session (each mapped to the one it is near). */
    readonly neighbours?: (rawNodeIds: readonly string[], window: number) => Promise<Map<string, string>>;
  },
): Promise<Route> {
  const { config, pageBeam } = options;
  const terms = new Set(contentWords(query.text));
  const scoreEntry = (entry: IndexEntry) => entryScore(query, terms, entry);
  const pages = scorePages(query, terms, active);
  const { chosenPages, pageTrace } = choosePages(pages, pageBeam, config.gamma);
  const { chosen, entryTrace } = chooseEntries(chosenPages, scoreEntry, config.entries);

  const nodes = new Map<string, RoutedNode>();
  for (const { entry, score } of chosen) reach(nodes, entry, entry.id, score, "entry", entry.predecessor !== null);
  await followLinks(nodes, entryTrace, chosen, { query, linked, scoreEntry, config });
  if (config.window > 0 && options.neighbours) await addNeighbours(nodes, config.window, options.neighbours);

  return {
    nodes,
    pagesRead: chosenPages.length,
    pagesCut: Math.max(0, pages.length - chosenPages.length),
    trace: {
      pages: pages
        .map((page) => ({
          page: page.page,
          entries: page.entries.length,
          similarity: roundForRecord(page.similarity),
          coverageGain: roundForRecord(pageTrace.get(page.page)?.coverageGain ?? 0),
          score: roundForRecord(pageTrace.get(page.page)?.score ?? page.similarity),
          read: chosenPages.includes(page),
        }))
        .sort((a, b) => b.score - a.score),
      entries: entryTrace,
      expanded: nodes.size,
      config: { ...config, pageBeam },
    },
  };
}

interface ScoredPage {
  readonly page: number;
  readonly entries: readonly IndexEntry[];
  readonly similarity: number;
  readonly sessions: ReadonlySet<string>;
  readonly labels: ReadonlySet<string>;
}

type EntryTrace = RouteTrace["entries"][number];

/** Every page of the active index with its entries, its similarity to the query, and what it would cover. */
function scorePages(query: RouteQuery, terms: ReadonlySet<string>, active: readonly IndexEntry[]): ScoredPage[] {
  const byPage = new Map<number, IndexEntry[]>();
  for (const entry of active) {
    if (entry.page === null) continue;
    byPage.set(entry.page, [...(byPage.get(entry.page) ?? []), entry]);
  }
  return [...byPage.entries()].map(([page, entries]) => ({
    page,
    entries,
    similarity: pageSimilarity(query, terms, entries),
    sessions: new Set(entries.flatMap((entry) => entry.sessions)),
    labels: new Set(entries.map((entry) => entry.lastAction)),
  }));
}

/** Greedy beam: each next page maximises similarity + γ·(share of its sessions and relation labels not yet covered). */
function choosePages(
  pages: readonly ScoredPage[],
  pageBeam: number,
  gamma: number,
): { chosenPages: ScoredPage[]; pageTrace: Map<number, { coverageGain: number; score: number }> } {
  const covered = { sessions: new Set<string>(), labels: new Set<string>() };
  const chosenPages: ScoredPage[] = [];
  const pageTrace = new Map<number, { coverageGain: number; score: number }>();
  while (chosenPages.length < Math.min(pageBeam, pages.length)) {
    let best: { page: ScoredPage; gain: number; score: number } | null = null;
    for (const page of pages) {
      if (chosenPages.includes(page)) continue;
      const gain = coverageGain(page, covered);
      const score = page.similarity + gamma * gain;
      // An unread page is reported with its score in the last round it competed in.
      pageTrace.set(page.page, { coverageGain: gain, score });
      if (!best || score > best.score) best = { page, gain, score };
    }
    if (!best) break;
    pageTrace.set(best.page.page, { coverageGain: best.gain, score: best.score });
    chosenPages.push(best.page);
    for (const session of best.page.sessions) covered.sessions.add(session);
    for (const label of best.page.labels) covered.labels.add(label);
  }
  return { chosenPages, pageTrace };
}

/** The best `entries` entries on the chosen pages; the trace lists every entry on them. */
function chooseEntries(
  chosenPages: readonly ScoredPage[],
  scoreEntry: (entry: IndexEntry) => number,
  entries: number,
): { chosen: { entry: IndexEntry; score: number }[]; entryTrace: EntryTrace[] } {
  const onPages = chosenPages
    .flatMap((page) => page.entries)
    .map((entry) => ({ entry, score: scoreEntry(entry) }))
    .sort((a, b) => b.score - a.score || a.entry.id.localeCompare(b.entry.id));
  const entryTrace: EntryTrace[] = onPages.map(({ entry, score }, rank) => ({
    id: entry.id,
    page: entry.page,
    status: entry.status,
    score: roundForRecord(score),
    via: "entry" as const,
    chosen: rank < entries,
  }));
  return { chosen: onPages.slice(0, entries), entryTrace };
}

/** Maps each of the entry's raw nodes to how it was reached, unless it was already reached with a higher score. */
function reach(
  nodes: Map<string, RoutedNode>,
  entry: IndexEntry,
  head: string,
  score: number,
  via: RouteVia,
  latest: boolean,
): void {
  for (const pointer of entry.pointers) {
    const current = nodes.get(pointer);
    if (!current || current.score < score) nodes.set(pointer, { entry: entry.id, head, score, via, latest });
  }
}

/**
 * Linked entries preselected by vector per host, as a multiple of those kept (`linked`): room for
 * the lexical and image scores to reorder what the vector ranked (c567e15), not measured.
 */
const linkedPreselection = 4;
/** What an earlier state or a neighbour scores under what reached it: just below, so it never outranks it. */
const justBelow = 1e-6;

/**
 * Entries reached through links: overflow fallbacks hosted by a chosen entry, and earlier states,
 * `linkDepth` levels deep; each level is one read of linked entries, and the walk stops when a level
 * reaches nothing. The capacity fallback builds chains: an entry that hosts fallbacks becomes one
 * itself when the index fills again, so what overflowed first sits deepest. At 3 levels (the setting
 * until decision 029) the oldest overflowed segments of a LoCoMo history could not be reached at all;
 * the guest covers steer each level toward the branch that leads to the question.
 */
async function followLinks(
  nodes: Map<string, RoutedNode>,
  entryTrace: EntryTrace[],
  chosen: readonly { entry: IndexEntry; score: number }[],
  context: {
    readonly query: RouteQuery;
    readonly linked: LinkedEntries;
    readonly scoreEntry: (entry: IndexEntry) => number;
    readonly config: RouteConfig;
  },
): Promise<void> {
  const { query, config } = context;
  let frontier = chosen.map(({ entry, score }) => ({ entry, score, head: entry.id }));
  for (let depth = 0; depth < config.linkDepth && frontier.length > 0; depth++) {
    const more = await context.linked({
      hosts: frontier.map(({ entry }) => entry.id),
      ids: frontier.flatMap(({ entry }) => (entry.predecessor ? [entry.predecessor] : [])),
      // Preselect by vector, then score the few with every signal.
      ...(query.vector ? { nearest: { vector: query.vector, perHost: linkedPreselection * config.linked } } : {}),
    });
    const next: typeof frontier = [];
    for (const parent of frontier) {
      const reached = more
        .filter((entry) => entry.host === parent.entry.id || entry.id === parent.entry.predecessor)
        .filter((entry) => entry.status !== "merged") // a merged entry's pointers are already its host's
        .map((entry) => ({ entry, score: context.scoreEntry(entry) }))
        .sort((a, b) => b.score - a.score || a.entry.id.localeCompare(b.entry.id))
        .slice(0, config.linked);
      for (const { entry, score } of reached) {
        const earlier = entry.id === parent.entry.predecessor;
        // An earlier state never outranks the state that replaced it.
        const effective = earlier ? Math.min(score, parent.score) - justBelow : score;
        const via = earlier ? "earlier-state" : "overflow";
        reach(nodes, entry, parent.head, effective, via, false);
        entryTrace.push({
          id: entry.id,
          page: entry.page,
          status: entry.status,
          score: roundForRecord(effective),
          via,
          chosen: true,
        });
        next.push({ entry, score: effective, head: parent.head });
      }
    }
    // Each level follows links from at most `entries` entries, the best first.
    frontier = next.sort((a, b) => b.score - a.score).slice(0, config.entries);
  }
}

/** The neighbour window: raw nodes either side of what the chosen entries point at, same session. */
async function addNeighbours(
  nodes: Map<string, RoutedNode>,
  window: number,
  neighbours: (rawNodeIds: readonly string[], window: number) => Promise<Map<string, string>>,
): Promise<void> {
  const direct = [...nodes.entries()].filter(([, via]) => via.via === "entry").map(([id]) => id);
  for (const [id, near] of await neighbours(direct, window)) {
    const from = nodes.get(near);
    if (!nodes.has(id) && from) nodes.set(id, { ...from, score: from.score - justBelow, via: "neighbour" });
  }
}

/** Share of the query's content words an entry's routing text carries, with its vectors' similarity. */
function entryScore(query: RouteQuery, terms: ReadonlySet<string>, entry: IndexEntry): number {
  const lexical = overlap(terms, [entry]);
  const dense = query.vector ? denseScore(query.vector, entry) : null;
  const image = query.imageVector && entry.imageVector ? cosine(query.imageVector, entry.imageVector) : null;
  return combine(lexical, dense, image, terms.size > 0);
}

function pageSimilarity(query: RouteQuery, terms: ReadonlySet<string>, entries: readonly IndexEntry[]): number {
  const lexical = overlap(terms, entries);
  const { vector, imageVector } = query;
  const dense = vector ? Math.max(...entries.map((entry) => denseScore(vector, entry))) : null;
  const entryImages = entries.flatMap((entry) => (entry.imageVector ? [entry.imageVector] : []));
  const image =
    imageVector && entryImages.length > 0
      ? Math.max(...entryImages.map((entryImage) => cosine(imageVector, entryImage)))
      : null;
  return combine(lexical, dense, image, terms.size > 0);
}

/** Each entry's guest-cover vector, decoded once per entry object (entries are cached per index version). */
const coverVectors = new WeakMap<IndexEntry, Float32Array | null>();

/** The query's similarity to the entry or, if closer, to the mean of what it leads to (decision 029). */
function denseScore(vector: Float32Array, entry: IndexEntry): number {
  let cover = coverVectors.get(entry);
  if (cover === undefined) {
    cover = coverVector(entry.digest.cover);
    coverVectors.set(entry, cover);
  }
  const own = cosine(vector, entry.vector);
  return cover && cover.length === vector.length ? Math.max(own, cosine(vector, cover)) : own;
}

/** Mean of the signals the query has: lexical coverage, text similarity, image similarity. */
function combine(lexical: number, dense: number | null, image: number | null, hasText: boolean): number {
  const parts = [hasText ? lexical : null, dense, image].filter((part): part is number => part !== null);
  return parts.length === 0 ? 0 : parts.reduce((sum, part) => sum + part, 0) / parts.length;
}

/**
 * Each entry's routing terms, kept per entry object: entries are immutable and the search caches
 * them per index version, so a search does not split every entry's text again (it was most of the
 * router's time at 100k raw nodes).
 */
const entryTerms = new WeakMap<IndexEntry, ReadonlySet<string>>();

function termsOf(entry: IndexEntry): ReadonlySet<string> {
  const cached = entryTerms.get(entry);
  if (cached) return cached;
  const terms = new Set<string>();
  for (const word of contentWords(entry.routingText)) terms.add(word);
  for (const keyword of Object.keys(entry.digest.keywords)) terms.add(keyword);
  for (const entity of Object.keys(entry.digest.entities)) for (const word of contentWords(entity)) terms.add(word);
  // What the entry leads to (its guest cover, decision 029): a query about an overflowed segment reaches its host.
  for (const term of Object.keys(entry.digest.cover?.terms ?? {})) terms.add(term);
  entryTerms.set(entry, terms);
  return terms;
}

/** Share of the query's terms that some of the entries carry. */
function overlap(query: ReadonlySet<string>, entries: readonly IndexEntry[]): number {
  if (query.size === 0) return 0;
  let hits = 0;
  for (const term of query) if (entries.some((entry) => termsOf(entry).has(term))) hits++;
  return hits / query.size;
}

function coverageGain(
  page: { sessions: ReadonlySet<string>; labels: ReadonlySet<string> },
  covered: { sessions: ReadonlySet<string>; labels: ReadonlySet<string> },
): number {
  const share = (items: ReadonlySet<string>, seen: ReadonlySet<string>) =>
    items.size === 0 ? 0 : [...items].filter((item) => !seen.has(item)).length / items.size;
  return (share(page.sessions, covered.sessions) + share(page.labels, covered.labels)) / 2;
}
