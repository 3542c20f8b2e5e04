import type { VectorSpaces } from "../models/vector-spaces.ts";
import type { IndexEntry, IndexState } from "../store/index-records.ts";
import type { Entry } from "../store/records.ts";
import type { ScopedStore } from "../store/store.ts";
import { checkIndex, type IndexViolation } from "./check.ts";
import type { IndexBounds, IndexUtilisation, MaintenanceConfig } from "./config.ts";
import { planReachabilityRepair } from "./forget-plan.ts";
import type { MaintenancePolicy } from "./ramu.ts";
import { replayIndex } from "./replay-index.ts";
import { measure } from "./working-index.ts";

/** What `cairn check` reports for one scope. */
export interface IndexCheck {
  readonly violations: readonly IndexViolation[];
  readonly rawNodes: number;
  /** Entries of every status. */
  readonly entries: number;
  readonly utilisation: IndexUtilisation;
}

/**
 * Verifies DESIGN invariants 2 and 6 on a scope's stored index: every raw node reachable from an
 * active entry or a recorded fallback, links sound, every maintenance action audited, bounds held.
 */
export async function checkScopeIndex(scoped: ScopedStore, bounds: IndexBounds): Promise<IndexCheck> {
  const state = await scoped.readIndex({ activeOnly: false });
  const rawNodeIds: string[] = [];
  for (const session of await scoped.readSessions({})) {
    for (const node of await scoped.readRawNodes({ sessionId: session.id })) rawNodeIds.push(node.id);
  }
  const audits = await scoped.readAudit();
  return {
    violations: checkIndex({ entries: state.entries, rawNodeIds, audits, bounds }),
    rawNodes: rawNodeIds.length,
    entries: state.entries.size,
    utilisation: measure(state.entries, bounds),
  };
}

/** Entries as callers see them, oldest first; `limit` absent means all. */
export async function listPublicEntries(
  scoped: ScopedStore,
  options: { readonly limit?: number; readonly offset?: number; readonly status?: Entry["status"] } = {},
): Promise<Entry[]> {
  const state = await scoped.readIndex({ activeOnly: options.status === "active" });
  const entries = [...state.entries.values()].filter((entry) => !options.status || entry.status === options.status);
  const offset = options.offset ?? 0;
  return entries
    .sort((a, b) => a.timeStartMs - b.timeStartMs || a.id.localeCompare(b.id))
    .slice(offset, options.limit === undefined ? undefined : offset + options.limit)
    .map(toPublicEntry);
}

export function toPublicEntry(entry: IndexEntry): Entry {
  return {
    id: entry.id,
    status: entry.status,
    page: entry.page,
    routingText: entry.routingText,
    tokens: entry.tokens,
    sessions: entry.sessions,
    timeStart: new Date(entry.timeStartMs).toISOString(),
    timeEnd: new Date(entry.timeEndMs).toISOString(),
    pointers: entry.pointers,
    predecessor: entry.predecessor,
    host: entry.host,
    lastAction: entry.lastAction,
    relation: entry.relation,
    latest: entry.status === "active",
    entities: Object.keys(entry.digest.entities),
    createdAt: new Date(entry.createdMs).toISOString(),
    updatedAt: new Date(entry.updatedMs).toISOString(),
  };
}

/**
 * Rebuilds a scope's active index by replaying its sessions in time order through maintenance
 * (query-blind, as if they had just arrived): after a migration from a store without one, or a
 * change of bounds. The new index replaces the old one atomically.
 */
export async function rebuildScopeIndex(
  scoped: ScopedStore,
  context: {
    readonly policy: MaintenancePolicy;
    readonly config: MaintenanceConfig;
    readonly spaces: VectorSpaces;
    readonly newId: () => string;
  },
): Promise<IndexState> {
  const spaces = { text: context.spaces.text.name, image: context.spaces.image?.name ?? null };
  const replayed = await replayIndex(scoped, context.policy, {
    config: context.config,
    spaces,
    dimensions: context.spaces.text.dimensions,
    newId: context.newId,
  });
  await scoped.applyIndexPlan(replayed.plan, { spaces, replace: true });
  return replayed.state;
}

/** What `cairn check --repair` did to one scope. */
export interface IndexRepair {
  /** `none` for a sound index; `rehost` when hosting unreachable entries sufficed; `rebuild` when it took a replay. */
  readonly method: "none" | "rehost" | "rebuild";
  readonly before: IndexCheck;
  readonly after: IndexCheck;
  /** Entries hosted under an active entry by the re-host step. */
  readonly hosted: readonly string[];
}

/**
 * Repairs a scope whose index breaks invariant 2 (a store damaged by the old forget bug): first the
 * least change, hosting the unreachable entries under an active entry (planned, audited as
 * `index.repair`, applied through `applyIndexPlan`); if violations remain, the scope's index is
 * rebuilt by replaying its raw nodes (audited as `index.rebuild`).
 */
export async function repairScopeIndex(
  scoped: ScopedStore,
  context: Parameters<typeof rebuildScopeIndex>[1],
): Promise<IndexRepair> {
  const before = await checkScopeIndex(scoped, context.config.bounds);
  if (before.violations.length === 0) return { method: "none", before, after: before, hosted: [] };
  const plan = planReachabilityRepair(await scoped.readIndex({ activeOnly: false }), context.config.bounds);
  const spaces = { text: context.spaces.text.name, image: context.spaces.image?.name ?? null };
  if (plan.ops.length > 0) await scoped.applyIndexPlan(plan, { spaces, replace: false });
  // The entries the repair hosted (its audit names them); the plan also puts hosts whose guest covers changed.
  const hosted = plan.audits.flatMap((audit) => {
    const named = audit.details.hosted;
    return Array.isArray(named) ? named.filter((id): id is string => typeof id === "string") : [];
  });
  const rehosted = await checkScopeIndex(scoped, context.config.bounds);
  if (rehosted.violations.length === 0) return { method: "rehost", before, after: rehosted, hosted };
  await rebuildScopeIndex(scoped, context);
  return { method: "rebuild", before, after: await checkScopeIndex(scoped, context.config.bounds), hosted };
}
