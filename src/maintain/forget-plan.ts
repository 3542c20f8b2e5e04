import { InvariantError } from "../core/errors.ts";
import { meanVector } from "../core/vectors.ts";
import type {
  ForgetOp,
  ForgetPlan,
  GuestCover,
  IndexEntry,
  IndexOp,
  IndexState,
  MaintenanceAudit,
  MaintenancePlan,
} from "../store/index-records.ts";
import type { IndexBounds } from "./config.ts";
import { buildDigest, renderRoutingText } from "./digest.ts";
import { refreshCovers } from "./guest-cover.ts";
import type { StoredNode } from "./incoming.ts";
import { closestPairs, overflowAudit, overflowed, overflowRoles } from "./ramu.ts";
import { coverWithinShare, measure, overBounds } from "./working-index.ts";

/**
 * Forget's index repair as a pure function (DESIGN invariant 2): pointers to the forgotten raw
 * nodes go; an entry that keeps some is re-derived from what remains (its routing text may quote
 * forgotten words); an entry left with none is removed and whatever was reached through it gets
 * another way in, so every surviving raw node stays reachable from an active entry.
 */

/** What re-deriving an entry needs to know about one of its surviving raw nodes. */
export type SurvivingNode = StoredNode;

/**
 * Raw nodes whose data `planForget` needs: the surviving pointers of every entry the forget touches
 * (one that points at a forgotten raw node, or at a survivor whose text vector the forget replaces).
 */
export function survivorsToRead(
  state: IndexState,
  forgotten: ReadonlySet<string>,
  revectored: ReadonlySet<string> = new Set(),
): string[] {
  const ids = new Set<string>();
  for (const entry of state.entries.values()) {
    if (!entry.pointers.some((pointer) => forgotten.has(pointer) || revectored.has(pointer))) continue;
    for (const pointer of entry.pointers) if (!forgotten.has(pointer)) ids.add(pointer);
  }
  return [...ids];
}

/**
 * Plans the index side of forgetting `forgotten` against `state` (every entry, any status).
 * `survivors` must hold every id `survivorsToRead` named. An entry that points at a raw node in
 * `revectored` (a survivor whose index text quoted a forgotten turn, re-embedded by the forget; its
 * new vector is the one in `survivors`) is re-derived too, so its mean vector no longer carries the
 * forgotten words. Removals run in index order; each one
 * hands what it reached to its parent (the successor or host it was reached through) or, for an
 * active entry, to an heir that takes its page. A final pass hosts anything still unreachable (only
 * an index damaged before this forget has such entries) under an active entry, and reports it.
 */
export function planForget(
  state: IndexState,
  forgotten: ReadonlySet<string>,
  survivors: ReadonlyMap<string, SurvivingNode>,
  revectored: ReadonlySet<string>,
  /** The index's bounds: recomputed guest covers are cut to each entry's byte share, as maintenance cuts them. */
  bounds: IndexBounds,
): ForgetPlan {
  const entries = new Map(state.entries);
  const unlinks: ForgetOp[] = [];
  const toRemove: string[] = [];
  const rederived: string[] = [];
  for (const entry of state.entries.values()) {
    const lost = entry.pointers.filter((pointer) => forgotten.has(pointer));
    if (lost.length === 0) {
      if (entry.pointers.some((pointer) => revectored.has(pointer))) {
        // Its raw nodes all stay: only the text vector (their mean) is made again.
        const { vector, vectorWeight } = rederive(entry, entry.pointers, survivors);
        entries.set(entry.id, { ...entry, vector, vectorWeight });
        rederived.push(entry.id);
      }
      continue;
    }
    unlinks.push({ op: "unlink", entryId: entry.id, pointers: lost });
    const kept = entry.pointers.filter((pointer) => !forgotten.has(pointer));
    if (kept.length === 0) {
      toRemove.push(entry.id);
      continue;
    }
    entries.set(entry.id, rederive(entry, kept, survivors));
    rederived.push(entry.id);
  }
  const links = new LinkRepair(entries);
  for (const id of toRemove) links.remove(id);
  const orphansHosted = links.hostOrphans();

  const removed = new Set(toRemove);
  // Guest covers follow (decision 029): no cover keeps the words of a forgotten or moved entry.
  const fit = coverWithinShare(bounds);
  const recovered = refreshCovers(entries, [...rederived, ...links.changed, ...toRemove], state.entries, fit);
  // A promoted heir or a re-derived entry may be larger than what it replaced: the index keeps its bounds.
  const bounded = overflowWithinBounds(entries, bounds, fit);
  const changed = new Set(
    [...rederived, ...links.changed, ...recovered, ...bounded.overflowed, ...bounded.recovered].filter(
      (id) => !removed.has(id),
    ),
  );
  const puts: ForgetOp[] = [...changed].map((id) => ({ op: "put", entry: links.get(id) }));
  return {
    baseVersion: state.version,
    rawNodeIds: [...forgotten],
    ops: [...unlinks, ...puts, ...toRemove.map((entryId): ForgetOp => ({ op: "remove", entryId }))],
    repairs: {
      removed: toRemove,
      rederived: rederived.filter((id) => !removed.has(id)),
      promoted: links.promoted,
      relinked: [...links.changed].filter((id) => !removed.has(id) && !links.promoted.includes(id)),
      orphansHosted,
      overflowed: bounded.overflowed,
    },
    audits: bounded.audits,
  };
}

/**
 * While the repaired index is over a bound, maintenance's fallback, without a judge: the older entry
 * of the most similar active pair overflows under the newer, keeping every pointer (nothing is merged,
 * so no distinction is lost). Changes `entries` in place, hosts' covers included.
 */
function overflowWithinBounds(
  entries: Map<string, IndexEntry>,
  bounds: IndexBounds,
  fit: (entry: IndexEntry, cover: GuestCover) => GuestCover | undefined,
): { overflowed: string[]; recovered: string[]; audits: MaintenanceAudit[] } {
  const overflowedIds: string[] = [];
  const recovered: string[] = [];
  const audits: MaintenanceAudit[] = [];
  for (let reason = overBounds(measure(entries, bounds)); reason; reason = overBounds(measure(entries, bounds))) {
    const active = [...entries.values()].filter((entry) => entry.status === "active");
    const [pair] = closestPairs(active, 1);
    // A single entry over a bound has nothing to overflow under; the next write's maintenance warns of it.
    if (!pair) break;
    const { victim, host } = overflowRoles(pair);
    entries.set(victim.id, overflowed(victim, host));
    recovered.push(...refreshCovers(entries, [victim.id], undefined, fit));
    overflowedIds.push(victim.id);
    audits.push(overflowAudit(pair, reason));
  }
  return { overflowed: overflowedIds, recovered, audits };
}

/** Forgetting a whole scope: every entry goes, whatever it points at. */
export function planForgetAll(state: IndexState, rawNodeIds: readonly string[]): ForgetPlan {
  const entries = [...state.entries.values()];
  return {
    baseVersion: state.version,
    rawNodeIds,
    ops: [
      ...entries.map((entry): ForgetOp => ({ op: "unlink", entryId: entry.id, pointers: entry.pointers })),
      ...entries.map((entry): ForgetOp => ({ op: "remove", entryId: entry.id })),
    ],
    repairs: {
      removed: entries.map((entry) => entry.id),
      rederived: [],
      promoted: [],
      relinked: [],
      orphansHosted: [],
      overflowed: [],
    },
    audits: [],
  };
}

/** An entry rebuilt from its surviving raw nodes: digest, routing text, vectors, sessions and span. */
function rederive(
  entry: IndexEntry,
  kept: readonly string[],
  survivors: ReadonlyMap<string, SurvivingNode>,
): IndexEntry {
  const nodes = kept.map((id) => {
    const node = survivors.get(id);
    if (!node) throw new InvariantError("forget plan", `needs surviving raw node ${id} (see survivorsToRead)`);
    return node;
  });
  const digest = buildDigest(nodes);
  const times = nodes.map((node) => node.timeMs);
  const span = { startMs: Math.min(...times), endMs: Math.max(...times) };
  // The entry keeps its own token allowance: a forget never makes routing text longer.
  const routing = renderRoutingText(digest, span, Math.max(1, entry.tokens));
  const textVectors = nodes.flatMap((node) => (node.vector ? [node.vector] : []));
  // An entry that never had an image vector does not gain one from its survivors' images.
  const imageVectors = entry.imageVector ? nodes.flatMap((node) => node.imageVectors) : [];
  return {
    ...entry,
    digest,
    routingText: routing.text,
    tokens: routing.tokens,
    vector: meanVector(textVectors) ?? entry.vector,
    vectorWeight: textVectors.length,
    imageVector: meanVector(imageVectors),
    imageWeight: imageVectors.length,
    pointers: kept,
    sessions: [...new Set(nodes.map((node) => node.sessionKey))],
    timeStartMs: span.startMs,
    timeEndMs: span.endMs,
  };
}

/**
 * Link surgery on a copy of the index. Reachability runs from an active entry down through
 * `predecessor` links (to earlier states) and to the entries that name it as `host`; removing an
 * entry must splice both kinds of link around it.
 */
class LinkRepair {
  readonly changed = new Set<string>();
  readonly promoted: string[] = [];
  readonly #entries: Map<string, IndexEntry>;

  constructor(entries: Map<string, IndexEntry>) {
    this.#entries = entries;
  }

  get(id: string): IndexEntry {
    const entry = this.#entries.get(id);
    if (!entry) throw new InvariantError("forget plan", `entry ${id} is not in the index being repaired`);
    return entry;
  }

  remove(id: string): void {
    const entry = this.get(id);
    const hosted = this.#hostedBy(id);
    // Usually one later state names an entry as its predecessor, but two segments of one session
    // may both update it: every one of them is spliced, or a forget leaves a link to nothing.
    const successors = [...this.#entries.values()].filter((other) => other.predecessor === id);
    const successor = successors[0] ?? null;
    if (entry.status === "active") {
      // The earlier state takes the page first (it is what the entry updated), else the most recent hosted entry.
      const heirId = entry.predecessor ?? hosted[0]?.id ?? null;
      if (heirId) {
        this.#set(heirId, { status: "active", page: entry.page, host: null, lastAction: "promoted" });
        this.promoted.push(heirId);
        for (const child of hosted) if (child.id !== heirId) this.#set(child.id, { host: heirId });
      }
      for (const later of successors) this.#set(later.id, { predecessor: null });
    } else {
      // Reached through its successor (an earlier state) or its host; a repair may have given a
      // superseded entry a host after its successor went, so either may be the way in.
      const parent =
        entry.status === "superseded" ? (successor?.id ?? entry.host) : (entry.host ?? successor?.id ?? null);
      for (const later of successors) this.#set(later.id, { predecessor: entry.predecessor });
      if (!successor && entry.predecessor) this.#set(entry.predecessor, { host: parent });
      for (const child of hosted) this.#set(child.id, { host: parent });
    }
    this.#entries.delete(id);
  }

  /**
   * Entries no active entry reaches. None exist after `remove` on a sound index; an index damaged
   * before this forget may have some, and hosting them keeps their evidence reachable.
   */
  hostOrphans(): string[] {
    const hosted: string[] = [];
    // Each pass hosts the roots of what is still unreachable; a cycle among strays, or a stray whose
    // root was a merged entry (hosted, but not walked), needs another pass.
    for (let pass = 0; pass < this.#entries.size; pass++) {
      const roots = this.#hostOrphanRoots();
      if (roots.length === 0) break;
      hosted.push(...roots);
    }
    return hosted;
  }

  #hostOrphanRoots(): string[] {
    const active = [...this.#entries.values()].filter((entry) => entry.status === "active");
    const reached = this.#reachable(active.map((entry) => entry.id));
    const orphans = [...this.#entries.values()].filter((entry) => !reached.has(entry.id));
    const anchor = active.reduce<IndexEntry | null>(
      (latest, entry) => (!latest || entry.timeEndMs > latest.timeEndMs ? entry : latest),
      null,
    );
    if (orphans.length === 0 || !anchor) return [];
    // Roots of the unreachable part: orphans no other orphan reaches.
    const reachedFromOrphans = new Set<string>();
    for (const orphan of orphans) {
      for (const id of this.#reachable([orphan.id])) if (id !== orphan.id) reachedFromOrphans.add(id);
    }
    const roots = orphans.filter((orphan) => !reachedFromOrphans.has(orphan.id));
    for (const root of roots.length > 0 ? roots : orphans.slice(0, 1)) {
      this.#set(root.id, { host: anchor.id, status: root.status === "active" ? "overflow" : root.status });
    }
    return (roots.length > 0 ? roots : orphans.slice(0, 1)).map((root) => root.id);
  }

  /**
   * Entries reached from `from` as a routed search walks (`routedReach`): a merged entry is reached
   * with its host, and so are the entries merged into it (their evidence is its host's too), but no
   * other link is walked from it, so an earlier state or a guest hanging off a merged entry counts
   * as unreachable and gets hosted.
   */
  #reachable(from: readonly string[]): Set<string> {
    const hostedBy = new Map<string, IndexEntry[]>();
    for (const entry of this.#entries.values()) {
      if (entry.host) hostedBy.set(entry.host, [...(hostedBy.get(entry.host) ?? []), entry]);
    }
    const starts = new Set(from);
    const seen = new Set<string>();
    const stack = [...from];
    for (let id = stack.pop(); id !== undefined; id = stack.pop()) {
      if (seen.has(id)) continue;
      seen.add(id);
      const entry = this.#entries.get(id);
      const guests = hostedBy.get(id) ?? [];
      if (entry?.status === "merged" && !starts.has(id)) {
        stack.push(...guests.filter((guest) => guest.status === "merged").map((guest) => guest.id));
        continue;
      }
      if (entry?.predecessor) stack.push(entry.predecessor);
      stack.push(...guests.map((guest) => guest.id));
    }
    return seen;
  }

  /** Entries hosted by `id`, most recent first (the likeliest to be asked about). */
  #hostedBy(id: string): IndexEntry[] {
    const order = new Map([...this.#entries.keys()].map((key, index) => [key, index]));
    return [...this.#entries.values()]
      .filter((entry) => entry.host === id)
      .sort((a, b) => b.timeEndMs - a.timeEndMs || (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
  }

  #set(id: string, fields: Partial<IndexEntry>): void {
    this.#entries.set(id, { ...this.get(id), ...fields });
    this.changed.add(id);
  }
}

/**
 * Repair of an index damaged before forget hosted strays (issue 18's first finding): entries no
 * active entry reaches are hosted under the most recent active entry, as a forget's final pass
 * does, and the plan carries one `index.repair` audit event naming them. Empty when every entry
 * is reachable. Pointers are untouched, so no evidence changes hands.
 */
export function planReachabilityRepair(state: IndexState, bounds: IndexBounds): MaintenancePlan {
  const entries = new Map(state.entries);
  const links = new LinkRepair(entries);
  const hosted = links.hostOrphans();
  const recovered = refreshCovers(entries, links.changed, state.entries, coverWithinShare(bounds));
  const ops = [...new Set([...links.changed, ...recovered])].map(
    (id): IndexOp => ({ op: "put", entry: links.get(id) }),
  );
  const anchor = hosted.length > 0 ? (links.get(hosted[0] as string).host ?? null) : null;
  return {
    baseVersion: state.version,
    ops,
    audits:
      hosted.length === 0
        ? []
        : [
            {
              action: "index.repair",
              subject: "index",
              details: {
                reason: "entries unreachable from the active index, hosted under an active entry",
                hosted,
                result: { host: anchor, hosted },
              },
            },
          ],
    warnings: [],
    overflowRepairs: 0,
  };
}
