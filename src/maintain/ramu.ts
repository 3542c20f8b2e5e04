import { InvariantError } from "../core/errors.ts";
import { roundForRecord } from "../core/round.ts";
import type { IndexEntry, IndexState, MaintenanceAudit, MaintenancePlan } from "../store/index-records.ts";
import type { IndexBounds, MaintenanceConfig } from "./config.ts";
import { renderRoutingText } from "./digest.ts";
import { ComparatorJudge, type Judgement, type JudgeView, type RelationJudge } from "./judge.ts";
import { entrySimilarity, type IncomingEntry, WorkingIndex } from "./working-index.ts";

/** A maintenance policy: how an incoming entry changes the index. RAMU is Cairn's; baselines sit beside it. */
export interface MaintenancePolicy {
  readonly name: string;
  /** Whether the policy keeps the index within its bounds (the no-maintenance baseline does not). */
  readonly bounded: boolean;
  apply(index: WorkingIndex, incoming: IncomingEntry, incomingView: JudgeView): Promise<void>;
}

/**
 * A page left empty is opened for an entry less similar than this to every page with room: the
 * comparator's `distinctVector` (below it, about something else); set in 5e72df4, not measured.
 */
const openPageSimilarity = 0.45;

/**
 * Closest pairs judged for a safe consolidation before the overflow fallback: each is a judge
 * call (a model call with the chat judge), so a few; set in 5e72df4, not measured.
 */
const consolidationPairs = 8;

/**
 * Plans the index changes for one session's incoming entries, in order, under `policy`.
 * Pure with respect to storage: the returned ops are applied by the store in the same
 * transaction as the session, or by `applyOps` in memory.
 */
export async function planMaintenance(
  state: IndexState,
  incoming: readonly IncomingEntry[],
  policy: MaintenancePolicy,
  options: { readonly bounds: IndexBounds; readonly newId: () => string; readonly nowMs: number },
): Promise<MaintenancePlan> {
  const index = new WorkingIndex(state, options.bounds, options.newId, options.nowMs);
  for (const entry of incoming) {
    await policy.apply(index, entry, incomingView(index, entry));
  }
  index.placeOnPages(openPageSimilarity, { unbounded: !policy.bounded });
  return {
    baseVersion: state.version,
    ops: index.ops,
    audits: index.audits,
    warnings: index.warnings,
    overflowRepairs: index.overflowRepairs,
  };
}

function incomingView(index: WorkingIndex, incoming: IncomingEntry): JudgeView {
  // The judge sees the same compact text the entry would carry.
  const routing = renderRoutingText(
    incoming.digest,
    { startMs: incoming.timeStartMs, endMs: incoming.timeEndMs },
    index.maxEntryTokens,
  );
  return {
    id: "incoming",
    routingText: routing.text,
    digest: incoming.digest,
    vector: incoming.vector,
    imageVector: incoming.imageVector,
    timeStartMs: incoming.timeStartMs,
    timeEndMs: incoming.timeEndMs,
  };
}

/**
 * C3M RAMU (Eq. 2–3): top-K candidates by similarity, a relation and confidence for each, then
 * Merge / Update / Add / Keep for the most confident one under threshold δ. At a bound, only
 * confirmed-safe redundancy is consolidated; otherwise an entry moves to the pointer-preserving
 * overflow fallback under its most similar active entry.
 */
export class Ramu implements MaintenancePolicy {
  readonly name = "ramu";
  readonly bounded = true;
  readonly #config: MaintenanceConfig;
  readonly #judge: RelationJudge;

  constructor(config: MaintenanceConfig, judge: RelationJudge = new ComparatorJudge()) {
    this.#config = config;
    this.#judge = judge;
  }

  async apply(index: WorkingIndex, incoming: IncomingEntry, view: JudgeView): Promise<void> {
    const judged = await this.#judgeCandidates(index, incoming, view);
    const best = judged.reduce<(typeof judged)[number] | null>(
      (top, item) => (!top || item.judgement.confidence > top.judgement.confidence ? item : top),
      null,
    );
    const delta = this.#config.delta;
    const record = {
      sessions: incoming.sessions,
      pointers: incoming.pointers,
      judge: this.#judge.id,
      delta,
      candidates: judged.map(({ entry, similarity, judgement }) => ({
        entry: entry.id,
        similarity: roundForRecord(similarity),
        relation: judgement.relation,
        confidence: judgement.confidence,
      })),
      relation: best?.judgement.relation ?? null,
      confidence: best?.judgement.confidence ?? null,
      features: best?.judgement.features ?? null,
    };
    if (best && best.judgement.relation === "same" && best.judgement.confidence >= delta) {
      const host = index.absorb(best.entry.id, incoming, { lastAction: "merge", relation: "same" });
      index.audit("index.merge", host.id, { ...record, target: best.entry.id, result: { entry: host.id } });
    } else if (best && best.judgement.relation === "update" && best.judgement.confidence >= delta) {
      const predecessor = best.entry;
      index.put({ ...predecessor, status: "superseded", page: null, lastAction: "superseded" });
      const successor = index.create(incoming, {
        lastAction: "update",
        relation: "update",
        predecessor: predecessor.id,
        page: predecessor.page,
      });
      // The later state leads to the earlier one: it covers it (decision 029).
      index.coverReached(successor.id, predecessor);
      index.audit("index.update", successor.id, {
        ...record,
        target: predecessor.id,
        result: { entry: successor.id, predecessor: predecessor.id, latest: successor.id },
      });
    } else {
      const action = judged.length === 0 ? "add" : "keep";
      const entry = index.create(incoming, { lastAction: action, relation: best?.judgement.relation ?? null });
      index.audit(`index.${action}`, entry.id, {
        ...record,
        target: best?.entry.id ?? null,
        result: { entry: entry.id },
      });
    }
    await this.enforceBounds(index);
  }

  /** C3M Eq. 2: the top-K active entries by similarity, each with the judge's relation and confidence. */
  async #judgeCandidates(index: WorkingIndex, incoming: IncomingEntry, view: JudgeView): Promise<Judged[]> {
    const candidates = index
      .active()
      .map((entry) => ({ entry, similarity: entrySimilarity(incoming, entry) }))
      .sort((a, b) => b.similarity - a.similarity || a.entry.id.localeCompare(b.entry.id))
      .slice(0, this.#config.candidates);
    const judged: Judged[] = [];
    for (const candidate of candidates) {
      const judgement = await this.#judge.judge(view, toView(candidate.entry));
      if (judgement.warning) index.warnings.push(judgement.warning);
      judged.push({ ...candidate, judgement });
    }
    return judged;
  }

  /** While over a bound: consolidate a confirmed-safe redundant pair, else take the overflow fallback. */
  async enforceBounds(index: WorkingIndex): Promise<void> {
    for (let reason = index.overBounds(); reason; reason = index.overBounds()) {
      const active = index.active();
      if (active.length < 2) {
        index.warnings.push(`the index is over its ${reason} bound with a single entry; nothing left to repair`);
        return;
      }
      const pairs = closestPairs(active, consolidationPairs);
      let consolidated = false;
      for (const { a, b, similarity } of pairs) {
        const [older, newer] = a.timeStartMs <= b.timeStartMs ? [a, b] : [b, a];
        // An entry keeps one earlier state: two chains cannot meet in one survivor, and a merged
        // entry's own chain is not walked (its pointers are its host's), so such a pair overflows instead.
        if (older.predecessor && newer.predecessor) continue;
        const judgement = await this.#judge.judge(toView(newer), toView(older));
        if (judgement.warning) index.warnings.push(judgement.warning);
        if (judgement.relation !== "same" || judgement.confidence < this.#config.delta) continue;
        index.put({ ...index.get(newer.id), status: "merged", host: older.id, page: null, lastAction: "consolidated" });
        const absorbed = index.absorb(older.id, newer, { lastAction: "consolidate", relation: "same" });
        // The survivor is the same fact as the merged entry, so the merged entry's earlier states are
        // the survivor's: without the link they (and what they host) were reachable from nothing.
        const host = newer.predecessor ? index.put({ ...absorbed, predecessor: newer.predecessor }) : absorbed;
        index.audit("index.consolidate", host.id, {
          reason,
          pair: [older.id, newer.id],
          similarity: roundForRecord(similarity),
          relation: judgement.relation,
          confidence: judgement.confidence,
          features: judgement.features,
          delta: this.#config.delta,
          result: { entry: host.id, merged: newer.id },
        });
        consolidated = true;
        break;
      }
      if (consolidated) continue;
      const closest = pairs[0];
      // Two or more active entries always make a pair.
      if (!closest) throw new InvariantError("closest-pair", `no pair among ${active.length} active entries`);
      overflow(index, closest, reason);
    }
  }
}

interface Judged {
  readonly entry: IndexEntry;
  readonly similarity: number;
  readonly judgement: Judgement;
}

export interface Pair {
  readonly a: IndexEntry;
  readonly b: IndexEntry;
  readonly similarity: number;
}

/**
 * The fallback: the older entry of the most similar pair leaves the active bounds but keeps
 * every pointer, reachable through its partner. No routing text is merged, so no distinction is erased.
 */
export function overflow(index: WorkingIndex, pair: Pair, reason: string): void {
  const { victim, host } = overflowRoles(pair);
  index.put(overflowed(victim, host));
  // The host now leads to the victim and all it led to: its cover says so (decision 029).
  index.coverReached(host.id, victim);
  index.overflowRepairs++;
  const audit = overflowAudit(pair, reason);
  index.audit(audit.action, audit.subject, audit.details);
}

/** Which entry of a pair leaves the active bounds (the older) and which hosts it. */
export function overflowRoles(pair: Pair): { readonly victim: IndexEntry; readonly host: IndexEntry } {
  const [victim, host] = pair.a.timeEndMs <= pair.b.timeEndMs ? [pair.a, pair.b] : [pair.b, pair.a];
  return { victim, host };
}

/** The victim as an overflowed entry: off its page, reached through `host`. */
export function overflowed(victim: IndexEntry, host: IndexEntry): IndexEntry {
  return { ...victim, status: "overflow", host: host.id, page: null, lastAction: "overflow" };
}

/** The `index.overflow` event of one fallback, whoever takes it (maintenance or a forget's repair). */
export function overflowAudit(pair: Pair, reason: string): MaintenanceAudit {
  const { victim, host } = overflowRoles(pair);
  return {
    action: "index.overflow",
    subject: victim.id,
    details: {
      reason,
      host: host.id,
      similarity: roundForRecord(pair.similarity),
      pointers: victim.pointers.length,
      result: { entry: victim.id, status: "overflow", reachableThrough: host.id },
    },
  };
}

/** Similarities between immutable entries, computed once per pair (the bounds loop asks again and again). */
const pairSimilarity = new WeakMap<IndexEntry, WeakMap<IndexEntry, number>>();

function similarityOf(a: IndexEntry, b: IndexEntry): number {
  let row = pairSimilarity.get(a);
  if (!row) {
    row = new WeakMap();
    pairSimilarity.set(a, row);
  }
  let similarity = row.get(b);
  if (similarity === undefined) {
    similarity = entrySimilarity(a, b);
    row.set(b, similarity);
  }
  return similarity;
}

/** The `limit` most similar pairs, best first (ties by ids, so the choice is deterministic). */
export function closestPairs(entries: readonly IndexEntry[], limit: number): Pair[] {
  const better = (x: Pair, y: Pair) =>
    y.similarity - x.similarity || x.a.id.localeCompare(y.a.id) || x.b.id.localeCompare(y.b.id);
  const top: Pair[] = [];
  for (const [at, a] of entries.entries()) {
    for (const b of entries.slice(at + 1)) {
      const pair = { a, b, similarity: similarityOf(a, b) };
      const worst = top[limit - 1];
      if (top.length === limit && worst && better(pair, worst) >= 0) continue;
      top.push(pair);
      top.sort(better);
      if (top.length > limit) top.pop();
    }
  }
  return top;
}

export function toView(entry: IndexEntry): JudgeView {
  return {
    id: entry.id,
    routingText: entry.routingText,
    digest: entry.digest,
    vector: entry.vector,
    imageVector: entry.imageVector,
    timeStartMs: entry.timeStartMs,
    timeEndMs: entry.timeEndMs,
  };
}
