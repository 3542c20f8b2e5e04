import { contentWords } from "../core/text.ts";
import { cosine } from "../core/vectors.ts";
import type { RouteConfig, RouteTrace, RouteVia } from "../evidence/route-trace.ts";
import type { IndexEntry } from "../store/index-records.ts";

/**
 * γ favours pages that bring sessions and relation labels not yet read. λ defaults to 0: with the
 * default budget (12 raw nodes) every coverage weight we measured (0.05, 0.15) lost evidence
 * recall on LoCoMo and Mem-Gallery, so coverage is opt-in (docs/decisions/005). Score fusion ranks
 * every candidate routing reached; RRF only sees each list's top ten.
 */
export const defaultRouteConfig: RouteConfig = Object.freeze({
  gamma: 0.2,
  lambda: 0,
  entries: 8,
  linked: 4,
  window: 0,
  fusion: "sum",
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
  const byPage = new Map<number, IndexEntry[]>();
  for (const entry of active) {
    if (entry.page === null) continue;
    byPage.set(entry.page, [...(byPage.get(entry.page) ?? []), entry]);
  }
  const pages = [...byPage.entries()].map(([page, entries]) => ({
    page,
    entries,
    similarity: pageSimilarity(query, terms, entries),
    sessions: new Set(entries.flatMap((entry) => entry.sessions)),
    labels: new Set(entries.map((entry) => entry.lastAction)),
  }));

  // Greedy beam: each next page maximises similarity + γ·(share of its sessions and relation labels not yet covered).
  const covered = { sessions: new Set<string>(), labels: new Set<string>() };
  const chosenPages: typeof pages = [];
  const pageTrace = new Map<number, { coverageGain: number; score: number }>();
  while (chosenPages.length < Math.min(pageBeam, pages.length)) {
    let best: { page: (typeof pages)[number]; gain: number; score: number } | null = null;
    for (const page of pages) {
      if (chosenPages.includes(page)) continue;
      const gain = coverageGain(page, covered);
      const score = page.similarity + config.gamma * gain;
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

  const onPages = chosenPages
    .flatMap((page) => page.entries)
    .map((entry) => ({ entry, score: scoreEntry(entry) }))
    .sort((a, b) => b.score - a.score || a.entry.id.localeCompare(b.entry.id));
  const chosen = onPages.slice(0, config.entries);
  const entryTrace: RouteTrace["entries"][number][] = onPages.map(({ entry, score }, rank) => ({
    id: entry.id,
    page: entry.page,
    status: entry.status,
    score: round(score),
    via: "entry" as const,
    chosen: rank < config.entries,
  }));

  const nodes = new Map<string, RoutedNode>();
  const add = (entry: IndexEntry, head: string, score: number, via: RouteVia, latest: boolean) => {
    for (const pointer of entry.pointers) {
      const current = nodes.get(pointer);
      if (!current || current.score < score) nodes.set(pointer, { entry: entry.id, head, score, via, latest });
    }
  };
  for (const { entry, score } of chosen) add(entry, entry.id, score, "entry", entry.predecessor !== null);

  // Entries reached through links: overflow fallbacks hosted by a chosen entry, and earlier states.
  let frontier = chosen.map(({ entry, score }) => ({ entry, score, head: entry.id }));
  for (let depth = 0; depth < 3 && frontier.length > 0; depth++) {
    const more = await linked({
      hosts: frontier.map(({ entry }) => entry.id),
      ids: frontier.flatMap(({ entry }) => (entry.predecessor ? [entry.predecessor] : [])),
      // Preselect by vector (4× what is kept), then score the few with every signal.
      ...(query.vector ? { nearest: { vector: query.vector, perHost: 4 * config.linked } } : {}),
    });
    const next: typeof frontier = [];
    for (const parent of frontier) {
      const reached = more
        .filter((entry) => entry.host === parent.entry.id || entry.id === parent.entry.predecessor)
        .filter((entry) => entry.status !== "merged") // a merged entry's pointers are already its host's
        .map((entry) => ({ entry, score: scoreEntry(entry) }))
        .sort((a, b) => b.score - a.score || a.entry.id.localeCompare(b.entry.id))
        .slice(0, config.linked);
      for (const { entry, score } of reached) {
        const earlier = entry.id === parent.entry.predecessor;
        // An earlier state never outranks the state that replaced it.
        const effective = earlier ? Math.min(score, parent.score) - 1e-6 : score;
        add(entry, parent.head, effective, earlier ? "earlier-state" : "overflow", false);
        entryTrace.push({
          id: entry.id,
          page: entry.page,
          status: entry.status,
          score: round(effective),
          via: earlier ? "earlier-state" : "overflow",
          chosen: true,
        });
        next.push({ entry, score: effective, head: parent.head });
      }
    }
    // Each level follows links from at most `entries` entries, the best first.
    frontier = next.sort((a, b) => b.score - a.score).slice(0, config.entries);
  }

  if (config.window > 0 && options.neighbours) {
    // The neighbour window: raw nodes either side of what the chosen entries point at, same session.
    const direct = [...nodes.entries()].filter(([, via]) => via.via === "entry").map(([id]) => id);
    for (const [id, near] of await options.neighbours(direct, config.window)) {
      const from = nodes.get(near);
      if (!nodes.has(id) && from) nodes.set(id, { ...from, score: from.score - 1e-6, via: "neighbour" });
    }
  }

  return {
    nodes,
    pagesRead: chosenPages.length,
    pagesCut: Math.max(0, pages.length - chosenPages.length),
    trace: {
      pages: pages
        .map((page) => ({
          page: page.page,
          entries: page.entries.length,
          similarity: round(page.similarity),
          coverageGain: round(pageTrace.get(page.page)?.coverageGain ?? 0),
          score: round(pageTrace.get(page.page)?.score ?? page.similarity),
          read: chosenPages.includes(page),
        }))
        .sort((a, b) => b.score - a.score),
      entries: entryTrace,
      expanded: nodes.size,
      config: { ...config, pageBeam },
    },
  };
}

/** Share of the query's content words an entry's routing text carries, with its vectors' similarity. */
function entryScore(query: RouteQuery, terms: ReadonlySet<string>, entry: IndexEntry): number {
  const lexical = overlap(terms, termsOf([entry]));
  const dense = query.vector ? cosine(query.vector, entry.vector) : null;
  const image = query.imageVector && entry.imageVector ? cosine(query.imageVector, entry.imageVector) : null;
  return combine(lexical, dense, image, terms.size > 0);
}

function pageSimilarity(query: RouteQuery, terms: ReadonlySet<string>, entries: readonly IndexEntry[]): number {
  const lexical = overlap(terms, termsOf(entries));
  const dense = query.vector
    ? Math.max(...entries.map((entry) => cosine(query.vector as Float32Array, entry.vector)))
    : null;
  const withImages = entries.filter((entry) => entry.imageVector);
  const image =
    query.imageVector && withImages.length > 0
      ? Math.max(
          ...withImages.map((entry) => cosine(query.imageVector as Float32Array, entry.imageVector as Float32Array)),
        )
      : null;
  return combine(lexical, dense, image, terms.size > 0);
}

/** Mean of the signals the query has: lexical coverage, text similarity, image similarity. */
function combine(lexical: number, dense: number | null, image: number | null, hasText: boolean): number {
  const parts = [hasText ? lexical : null, dense, image].filter((part): part is number => part !== null);
  return parts.length === 0 ? 0 : parts.reduce((sum, part) => sum + part, 0) / parts.length;
}

function termsOf(entries: readonly IndexEntry[]): Set<string> {
  const terms = new Set<string>();
  for (const entry of entries) {
    for (const word of contentWords(entry.routingText)) terms.add(word);
    for (const keyword of Object.keys(entry.digest.keywords)) terms.add(keyword);
    for (const entity of Object.keys(entry.digest.entities)) for (const word of contentWords(entity)) terms.add(word);
  }
  return terms;
}

function overlap(query: ReadonlySet<string>, terms: ReadonlySet<string>): number {
  if (query.size === 0) return 0;
  let hits = 0;
  for (const term of query) if (terms.has(term)) hits++;
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

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
