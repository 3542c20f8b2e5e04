import { memRefinePolicy, movieChatPolicy, resumPolicy, unboundedPolicy } from "../../maintain/baselines.ts";
import { checkIndex, routedReach } from "../../maintain/check.ts";
import type { MaintenancePolicy } from "../../maintain/ramu.ts";
import { type ReplayedIndex, replayIndex } from "../../maintain/replay-index.ts";
import { measure } from "../../maintain/working-index.ts";
import { type SearchOptions, scopedStore, searchThroughIndex } from "../../memory.ts";
import type { IndexState } from "../../store/index-records.ts";
import type { BenchContext, BenchMethod, IndexFigures } from "../method.ts";
import { fromPack } from "./search-method.ts";

type ReadOptions = Omit<SearchOptions, "budget">;

/** Reads through the memory's own stored index, which RAMU maintained on every write of the replay. */
export function storedIndexMethod(name: string, description: string, options: ReadOptions): BenchMethod {
  return {
    name,
    description,
    async retrieve(context, question, queryImage) {
      const image = queryImage ? { data: queryImage } : undefined;
      const pack = await context.memory.search(
        context.scope,
        { text: question.text, image },
        { ...options, budget: context.budget },
      );
      return fromPack(pack);
    },
    async indexFigures(context) {
      const { memory, scope } = context;
      const check = await memory.checkIndex(scope);
      const state = await memory[scopedStore](scope).readIndex({ activeOnly: false });
      const actions: Record<string, number> = {};
      for (const event of await memory[scopedStore](scope).readAudit()) {
        if (event.action.startsWith("index.")) actions[event.action] = (actions[event.action] ?? 0) + 1;
      }
      return figures("ramu", state, check.rawNodes, check.violations.length, actions, memory.maintenance.bounds);
    },
  };
}

/**
 * A maintenance baseline of C3M §3.2: its index is replayed in memory from the same stored
 * sessions (same raw nodes, same embeddings, same bounds) and read by the same router.
 */
export function maintenanceBaseline(
  policy: MaintenancePolicy,
  description: string,
  options: ReadOptions = {},
): BenchMethod {
  const replays = new WeakMap<BenchContext, Promise<ReplayedIndex>>();
  let next = 0;
  const replayed = (context: BenchContext) => {
    let replay = replays.get(context);
    if (!replay) {
      replay = replayIndex(context.memory[scopedStore](context.scope), policy, {
        config: context.memory.maintenance,
        spaces: { text: context.memory.spaces.text.name, image: context.memory.spaces.image?.name ?? null },
        dimensions: context.memory.spaces.text.dimensions,
        newId: () => `${policy.name}-${next++}`,
      });
      replays.set(context, replay);
    }
    return replay;
  };
  return {
    name: policy.name,
    description,
    async retrieve(context, question, queryImage) {
      const { state } = await replayed(context);
      const image = queryImage ? { data: queryImage } : undefined;
      const pack = await context.memory[searchThroughIndex](
        context.scope,
        { text: question.text, image },
        { mode: "route", ...options, budget: context.budget },
        state,
      );
      return fromPack(pack);
    },
    async indexFigures(context) {
      const replay = await replayed(context);
      const bounds = context.memory.maintenance.bounds;
      const violations = checkIndex({
        entries: replay.state.entries,
        rawNodeIds: context.timeline.map((node) => node.id),
        audits: replay.plan.audits,
        bounds: policy.bounded ? bounds : null,
      }).length;
      return figures(policy.name, replay.state, replay.rawNodes, violations, replay.actions, bounds);
    },
  };
}

function figures(
  policy: string,
  state: IndexState,
  rawNodes: number,
  violations: number,
  actions: Readonly<Record<string, number>>,
  bounds: Parameters<typeof measure>[1],
): IndexFigures {
  const use = measure(state.entries, bounds);
  // Reachable as a search reaches it (`cairn check`'s definition), in one walk.
  const reachable = routedReach(state.entries);
  return {
    policy,
    utilisation: use.utilisation,
    activeEntries: use.entries,
    pages: use.pages,
    indexTokens: use.tokens,
    indexBytes: use.bytes,
    overflowRepairs: actions["index.overflow"] ?? 0,
    pointers: reachable.size,
    rawNodes,
    violations,
    actions,
  };
}

export const maintenanceBaselines: readonly BenchMethod[] = [
  maintenanceBaseline(
    resumPolicy,
    "ReSum: summarise the oldest entries into one, keep recent ones (same bounds, same router)",
  ),
  maintenanceBaseline(
    movieChatPolicy,
    "MovieChat: merge the most similar temporally adjacent entries (same bounds, same router)",
  ),
  maintenanceBaseline(
    memRefinePolicy(),
    "MemRefine-style: delete a near-duplicate pair's older entry, else merge the most similar pair",
  ),
  maintenanceBaseline(unboundedPolicy, "no maintenance: every segment is an entry, no bounds (same router)"),
];
