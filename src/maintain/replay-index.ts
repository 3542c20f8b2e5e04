import { applyOps } from "../store/index-plan.ts";
import type { IndexOp, IndexState, MaintenanceAudit, MaintenancePlan } from "../store/index-records.ts";
import type { ScopedStore } from "../store/store.ts";
import type { MaintenanceConfig } from "./config.ts";
import { buildIncomingEntries, withStoredVectors } from "./incoming.ts";
import { type MaintenancePolicy, planMaintenance } from "./ramu.ts";

/** A plan that changes nothing (for a session already stored). */
export function emptyPlan(): MaintenancePlan {
  return { baseVersion: null, ops: [], audits: [], warnings: [], overflowRepairs: 0 };
}

export interface ReplayedIndex {
  /** The index after every session, in memory. */
  readonly state: IndexState;
  /** Every op and audit event of the replay, as one plan against an empty index. */
  readonly plan: MaintenancePlan;
  readonly sessions: number;
  readonly rawNodes: number;
  readonly actions: Readonly<Record<string, number>>;
}

/**
 * Replays a scope's stored sessions in time order through a maintenance policy, query-blind,
 * in memory. The store is only read. Used to rebuild the index and by the harness to compare
 * maintenance policies over the same raw nodes and embeddings.
 */
export async function replayIndex(
  scoped: ScopedStore,
  policy: MaintenancePolicy,
  options: {
    readonly config: MaintenanceConfig;
    readonly spaces: { readonly text: string; readonly image: string | null };
    readonly dimensions: number;
    readonly newId: () => string;
  },
): Promise<ReplayedIndex> {
  const sessions = (await scoped.readSessions({})).sort(
    (a, b) => Date.parse(a.time) - Date.parse(b.time) || a.createdAt.localeCompare(b.createdAt),
  );
  let state: IndexState = { version: 0, entries: new Map() };
  const ops: IndexOp[] = [];
  const audits: MaintenanceAudit[] = [];
  const warnings: string[] = [];
  const actions: Record<string, number> = {};
  let overflowRepairs = 0;
  let rawNodes = 0;
  for (const session of sessions) {
    const nodes = await scoped.readRawNodes({ sessionId: session.id });
    rawNodes += nodes.length;
    const incomingNodes = await withStoredVectors(scoped, nodes, options.spaces);
    const incoming = buildIncomingEntries(session.key, incomingNodes, {
      segmentMaxNodes: options.config.segmentMaxNodes,
      dimensions: options.dimensions,
    });
    const plan = await planMaintenance(state, incoming, policy, {
      bounds: options.config.bounds,
      newId: options.newId,
      nowMs: Date.parse(session.time),
    });
    state = applyOps(state, plan.ops);
    ops.push(...plan.ops);
    audits.push(...plan.audits);
    warnings.push(...plan.warnings);
    overflowRepairs += plan.overflowRepairs;
    for (const audit of plan.audits) actions[audit.action] = (actions[audit.action] ?? 0) + 1;
  }
  return {
    state,
    plan: { baseVersion: 0, ops, audits, warnings, overflowRepairs },
    sessions: sessions.length,
    rawNodes,
    actions,
  };
}
