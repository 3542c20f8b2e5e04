import { setTimeout as sleep } from "node:timers/promises";
import { scopeKey } from "../core/scope.ts";
import type { VectorSpaces } from "../models/vector-spaces.ts";
import { applyOps } from "../store/index-plan.ts";
import { type IndexState, IndexVersionConflict, type MaintenancePlan, resolvePending } from "../store/index-records.ts";
import type { CommitResult, SessionWrite } from "../store/records.ts";
import type { ScopedStore } from "../store/store.ts";
import type { MaintenanceConfig } from "./config.ts";
import { buildIncomingEntries } from "./incoming.ts";
import { type MaintenancePolicy, planMaintenance } from "./ramu.ts";
import { emptyPlan } from "./replay-index.ts";
import type { IncomingEntry } from "./working-index.ts";

/** A plan that keeps losing to other writers gives up after this many tries (a `ConflictError`, HTTP 409). */
export const maxPlanAttempts = 16;

/**
 * Between tries a writer waits a random time up to `retryBaseMs · 2^(attempt−1)`, at most
 * `retryCapMs` ("full jitter"). Without it, writers racing one scope from several processes re-plan
 * in lock-step and the same one can lose every round (seen with 16 writers through two instances
 * on one Postgres database); with it they spread out and each gets its turn. Worst case ~2.5 s.
 */
const retryBaseMs = 4;
const retryCapMs = 250;

export interface MaintainedCommit {
  readonly result: CommitResult;
  /** The plan that landed with the session (empty for a duplicate). */
  readonly plan: MaintenancePlan;
}

export interface CommitContext {
  readonly policy: MaintenancePolicy;
  readonly config: MaintenanceConfig;
  readonly spaces: VectorSpaces;
  readonly newId: () => string;
  readonly now: () => number;
  /** This process's copy of each scope's active index, so a writer does not re-read it every session. */
  readonly activeIndex?: ActiveIndexCache;
}

/**
 * The active index of each scope as this process's last commit left it. A commit bumps the
 * scope's index version by exactly one and versions only ever grow, so a copy whose version equals
 * the stored one (a one-row read) is the stored index: applying a landed plan to the copy replaces
 * re-reading every entry (digests, vectors) before each plan. Any other writer (another process,
 * another `Memory`, a forget, a rebuild) moves the version past the copy's, and the next plan
 * reads the index again; a plan made from a copy that went stale in between still meets the
 * store's version check.
 */
export class ActiveIndexCache {
  readonly #states = new Map<string, IndexState>();
  readonly #capacity: number;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** The scope's active index: the copy when it is current, else read (and kept). */
  async read(scoped: ScopedStore): Promise<IndexState> {
    const key = scopeKey(scoped.scope);
    const cached = this.#states.get(key);
    if (cached && (await scoped.indexStatus()).version === cached.version) return cached;
    const state = await scoped.readIndex({ activeOnly: true });
    this.#keep(key, state);
    return state;
  }

  /**
   * Records that `plan`, made from `base`, landed with a session whose raw nodes got `rawNodeIds`
   * (the plan's `@n` pointers). The copy is labelled `base.version + 1`: if another writer's
   * commit came between (possible for a plan without a base version), the stored version is past
   * that and the copy is never used.
   */
  committed(scoped: ScopedStore, base: IndexState, plan: MaintenancePlan, rawNodeIds: readonly string[]): void {
    const next = applyOps(base, plan.ops, resolvePending(rawNodeIds));
    const active = new Map([...next.entries].filter(([, entry]) => entry.status === "active"));
    this.#keep(scopeKey(scoped.scope), { version: base.version + 1, entries: active });
  }

  /**
   * Keeps `state`, the active index a batch's plans were made up to and have all landed with, its
   * batch pointers (`@n` of the batch) named by `resolve`.
   */
  keepPlanned(scoped: ScopedStore, state: IndexState, resolve: (pointer: string) => string): void {
    const entries = new Map(
      [...state.entries].map(([id, entry]) => [id, { ...entry, pointers: entry.pointers.map(resolve) }]),
    );
    this.#keep(scopeKey(scoped.scope), { version: state.version, entries });
  }

  /** Forgets the scope's copy (after a failed or conflicting commit). */
  drop(scoped: ScopedStore): void {
    this.#states.delete(scopeKey(scoped.scope));
  }

  #keep(key: string, state: IndexState): void {
    this.#states.delete(key);
    this.#states.set(key, state);
    const oldest = this.#states.keys().next();
    if (this.#states.size > this.#capacity && !oldest.done) this.#states.delete(oldest.value);
  }
}

/**
 * The write pipeline's second half: cut the session into incoming entries, plan maintenance
 * against the active index as it is now, and commit the session with its plan in one transaction.
 * The plan only lands against the index version it was made from; when another writer got there
 * first it is made again, up to `maxPlanAttempts` times.
 */
export async function commitWithMaintenance(
  scoped: ScopedStore,
  write: Omit<SessionWrite, "index">,
  context: CommitContext,
): Promise<MaintainedCommit> {
  const { spaces } = context;
  const incoming = incomingEntriesOf(write, spaces, context.config.segmentMaxNodes);
  const indexSpaces = { text: spaces.text.name, image: spaces.image?.name ?? null };
  const cache = context.activeIndex;
  for (let attempt = 1; ; attempt++) {
    // A stored session gets no plan, being a duplicate or a conflict; an append to it does. With
    // the index cache, both reads start at once (one row each): on a store that waits on a server
    // their round trips overlap.
    const isStored = async () => !write.append && (await scoped.readSessions({ keys: [write.key] })).length > 0;
    let base: IndexState | null;
    if (cache) {
      const [stored, index] = await Promise.all([isStored(), cache.read(scoped)]);
      base = stored ? null : index;
    } else {
      base = (await isStored()) ? null : await scoped.readIndex({ activeOnly: true });
    }
    const plan = base
      ? await planMaintenance(base, incoming, context.policy, {
          bounds: context.config.bounds,
          newId: context.newId,
          nowMs: context.now(),
        })
      : emptyPlan();
    try {
      const result = await scoped.commitSession({ ...write, index: { plan, spaces: indexSpaces } });
      if (cache && base && !result.duplicate) cache.committed(scoped, base, plan, result.rawNodeIds);
      return { result, plan: result.duplicate ? emptyPlan() : plan };
    } catch (error) {
      cache?.drop(scoped);
      if (!(error instanceof IndexVersionConflict) || attempt >= maxPlanAttempts) throw error;
      await replanBackoff(attempt);
    }
  }
}

/**
 * `commitWithMaintenance` for several sessions of one scope in one transaction (`commitSessions`):
 * each session is planned in order against the index as the sessions before it leave it
 * (query-blind, exactly the plans one-by-one commits would make), then all land together or none
 * does. A session already stored, or named twice in the batch, gets no plan (the store answers it as
 * a duplicate, or refuses the whole batch if its content differs). A batch that loses to another
 * writer is planned again, as a single session is.
 */
export async function commitBatchWithMaintenance(
  scoped: ScopedStore,
  writes: readonly Omit<SessionWrite, "index">[],
  context: CommitContext,
): Promise<MaintainedCommit[]> {
  const { spaces } = context;
  const indexSpaces = { text: spaces.text.name, image: spaces.image?.name ?? null };
  const cache = context.activeIndex;
  const offsets: number[] = [];
  let total = 0;
  for (const write of writes) {
    offsets.push(total);
    total += write.rawNodes.length;
  }
  const incoming = writes.map((write, index) =>
    incomingEntriesOf(write, spaces, context.config.segmentMaxNodes, offsets[index]),
  );
  for (let attempt = 1; ; attempt++) {
    const stored = new Set(
      (await scoped.readSessions({ keys: writes.map((write) => write.key) })).map((session) => session.key),
    );
    const base = cache ? await cache.read(scoped) : await scoped.readIndex({ activeOnly: true });
    let state = base;
    const plans: MaintenancePlan[] = [];
    for (const [index, write] of writes.entries()) {
      // A stored session gets no plan, being a duplicate or a conflict; so does a key met earlier in the batch.
      if ((!write.append && stored.has(write.key)) || writes.findIndex((other) => other.key === write.key) < index) {
        plans.push(emptyPlan());
        continue;
      }
      const plan = await planMaintenance(state, incoming[index] ?? [], context.policy, {
        bounds: context.config.bounds,
        newId: context.newId,
        nowMs: context.now(),
      });
      plans.push(plan);
      state = activeOf(applyOps(state, plan.ops));
    }
    try {
      const results = await scoped.commitSessions(
        writes.map((write, index) => ({ ...write, index: { plan: plans[index] ?? emptyPlan(), spaces: indexSpaces } })),
      );
      const landed = results.map((result, index) => {
        const plan = plans[index] ?? emptyPlan();
        return { result, plan: result.duplicate ? emptyPlan() : plan, planned: plan.baseVersion !== null };
      });
      // A plan the store did not apply (a session another writer stored meanwhile) leaves the copy behind.
      if (cache && landed.every(({ result, planned }) => !(planned && result.duplicate))) {
        const ids = results.flatMap((result, index) =>
          Array.from({ length: writes[index]?.rawNodes.length ?? 0 }, (_, turn) => result.rawNodeIds[turn] ?? ""),
        );
        cache.keepPlanned(scoped, state, resolvePending(ids));
      } else {
        cache?.drop(scoped);
      }
      return landed.map(({ result, plan }) => ({ result, plan }));
    } catch (error) {
      cache?.drop(scoped);
      if (!(error instanceof IndexVersionConflict) || attempt >= maxPlanAttempts) throw error;
      await replanBackoff(attempt);
    }
  }
}

function activeOf(state: IndexState): IndexState {
  return {
    version: state.version,
    entries: new Map([...state.entries].filter(([, entry]) => entry.status === "active")),
  };
}

/** The wait before try `attempt + 1` of a plan that lost to another writer (see `retryBaseMs`). */
export function replanBackoff(attempt: number): Promise<void> {
  return sleep(Math.random() * Math.min(retryCapMs, retryBaseMs * 2 ** (attempt - 1)));
}

/** The incoming entries of a session about to be written: its raw nodes (`@n`), cut into coherent segments. */
export function incomingEntriesOf(
  write: Omit<SessionWrite, "index">,
  spaces: VectorSpaces,
  segmentMaxNodes: number,
  /** Where the write's raw nodes start in a batch's numbering (`commitSessions`); 0 for one session. */
  offset = 0,
): IncomingEntry[] {
  return buildIncomingEntries(
    write.key,
    write.rawNodes.map((node, index) => ({
      ref: `@${offset + index}`,
      speaker: node.speaker,
      text: node.text,
      imageText: node.images.flatMap((image) =>
        [image.caption, image.derivedText].filter((text): text is string => !!text),
      ),
      timeMs: node.timeMs,
      vector: node.textVectors[spaces.text.name] ?? null,
      imageVectors: node.imageVectors.flatMap((vectors) => {
        const vector = spaces.image ? vectors[spaces.image.name] : undefined;
        return vector ? [vector] : [];
      }),
    })),
    { segmentMaxNodes, dimensions: spaces.text.dimensions },
  );
}
