import { NotFoundError } from "../core/errors.ts";
import { embedTexts } from "../models/model-calls.ts";
import type { TextEmbedder } from "../models/provider.ts";
import type { VectorSpaces } from "../models/vector-spaces.ts";
import { type ForgetPlan, IndexVersionConflict } from "../store/index-records.ts";
import type { ForgetResult, ForgetTarget, RawNode, RawNodeReindex } from "../store/records.ts";
import type { ForgetRequest, ScopedStore } from "../store/store.ts";
import { maxPlanAttempts, replanBackoff } from "./commit-session.ts";
import type { IndexBounds } from "./config.ts";
import { planForget, planForgetAll, survivorsToRead } from "./forget-plan.ts";
import { withStoredVectors } from "./incoming.ts";

/**
 * How a forget re-derives the index text of the raw nodes it keeps: a turn's index text quotes the
 * gist of its neighbouring turns (store/index-text.ts), so forgetting one turn must rewrite the
 * lexical rows and text vectors of the turns beside it, or its words outlive it there.
 */
export interface ForgetRederive {
  /** Embeds the new index texts into the text space. */
  readonly embedder: TextEmbedder;
  /** One stored session's index texts, in turn order, as a write makes them now (`storedIndexTexts`). */
  readonly indexTexts: (nodes: readonly RawNode[]) => readonly string[];
  /**
   * Turns either side of a forgotten turn whose index text is made again. At least 1 whatever the
   * configuration: a store written with neighbours on must not keep them after they were switched off.
   */
  readonly neighbours: number;
}

/**
 * Forget, planned then applied like a write: read the index as it stands, plan its repair with the
 * pure `planForget`, re-derive (and embed) the index text of surviving turns that quoted forgotten
 * ones, and let the store delete the raw evidence, apply the plan and replace those index rows in
 * one transaction. If another writer changed the index in between, plan again. Without `rederive`
 * the survivors' index rows are left as they are (callers whose stores hold no neighbour context).
 */
export async function forgetWithRepair(
  scoped: ScopedStore,
  target: ForgetTarget,
  spaces: VectorSpaces,
  bounds: IndexBounds,
  rederive?: ForgetRederive,
): Promise<ForgetResult> {
  for (let attempt = 1; ; attempt++) {
    const request = await planFor(scoped, target, spaces, bounds, rederive);
    try {
      return await scoped.forget(request);
    } catch (error) {
      if (!(error instanceof IndexVersionConflict) || attempt >= maxPlanAttempts) throw error;
      await replanBackoff(attempt);
    }
  }
}

async function planFor(
  scoped: ScopedStore,
  target: ForgetTarget,
  spaces: VectorSpaces,
  bounds: IndexBounds,
  rederive: ForgetRederive | undefined,
): Promise<ForgetRequest> {
  const state = await scoped.readIndex({ activeOnly: false });
  const forgottenNodes = await targetRawNodes(scoped, target);
  const forgotten = new Set(forgottenNodes.map((node) => node.id));
  if ("all" in target) return { target, plan: planForgetAll(state, [...forgotten]) };
  // A session's forget takes every turn that could quote one of its turns: only a raw node's has survivors to re-derive.
  const reindex =
    rederive && "rawNode" in target ? await reindexSurvivors(scoped, forgottenNodes, spaces, rederive) : [];
  const revectored = new Map(
    reindex.flatMap((node) => {
      const vector = node.textVectors[spaces.text.name];
      return vector ? [[node.rawNodeId, vector] as const] : [];
    }),
  );
  const ids = survivorsToRead(state, forgotten, new Set(revectored.keys()));
  const nodes = await withStoredVectors(scoped, await scoped.readRawNodes({ ids }), {
    text: spaces.text.name,
    image: spaces.image?.name ?? null,
  });
  // Entries are re-derived from the survivors' new text vectors, not the ones that quoted the forgotten turns.
  const survivors = new Map(
    nodes.map((node) => [node.ref, { ...node, vector: revectored.get(node.ref) ?? node.vector }]),
  );
  const plan: ForgetPlan = planForget(state, forgotten, survivors, new Set(revectored.keys()), bounds);
  return reindex.length > 0 ? { target, plan, reindex } : { target, plan };
}

/**
 * The surviving turns near the forgotten ones, each with its index text made again from its session
 * without the forgotten turns, and that text embedded. A forget that takes whole sessions has none:
 * neighbours never cross sessions, so nothing is embedded.
 */
async function reindexSurvivors(
  scoped: ScopedStore,
  forgottenNodes: readonly RawNode[],
  spaces: VectorSpaces,
  rederive: ForgetRederive,
): Promise<RawNodeReindex[]> {
  const forgotten = new Set(forgottenNodes.map((node) => node.id));
  const radius = Math.max(1, rederive.neighbours);
  const touched: RawNode[] = [];
  const texts: string[] = [];
  for (const sessionId of new Set(forgottenNodes.map((node) => node.sessionId))) {
    const turns = await scoped.readRawNodes({ sessionId });
    const kept = turns.filter((node) => !forgotten.has(node.id));
    if (kept.length === 0) continue;
    const near = new Set<string>();
    turns.forEach((node, position) => {
      if (!forgotten.has(node.id)) return;
      for (let offset = -radius; offset <= radius; offset++) {
        const other = turns[position + offset];
        if (other && !forgotten.has(other.id)) near.add(other.id);
      }
    });
    const indexTexts = rederive.indexTexts(kept);
    kept.forEach((node, position) => {
      if (!near.has(node.id)) return;
      touched.push(node);
      texts.push(indexTexts[position] ?? "");
    });
  }
  if (touched.length === 0) return [];
  // Vectors only where the scope's text vectors are in this memory's space: a scope still in another
  // model's space keeps those until it is re-embedded (which derives every index text again).
  const inSpace = (await scoped.vectorSpacesInUse()).some((space) => space.name === spaces.text.name);
  const vectors = inSpace ? await embedTexts(rederive.embedder, texts) : [];
  return touched.map((node, index) => {
    const vector = vectors[index];
    return {
      rawNodeId: node.id,
      indexText: texts[index] ?? "",
      textVectors: vector ? { [spaces.text.name]: vector } : {},
    };
  });
}

/** The raw nodes a target covers now; an unknown session or raw node is a `NotFoundError`. */
async function targetRawNodes(scoped: ScopedStore, target: ForgetTarget): Promise<RawNode[]> {
  if ("rawNode" in target) {
    const [node] = await scoped.readRawNodes({ ids: [target.rawNode] });
    if (!node) throw new NotFoundError("raw node", target.rawNode);
    return [node];
  }
  const sessions =
    "all" in target
      ? await scoped.readSessions({})
      : await sessionByIdOrKey(scoped, target.session).then((session) => [session]);
  const nodes: RawNode[] = [];
  for (const session of sessions) nodes.push(...(await scoped.readRawNodes({ sessionId: session.id })));
  return nodes;
}

/** A session named by its id, else by its key (the caller's own id); ids win, as everywhere. */
export async function sessionByIdOrKey(scoped: ScopedStore, idOrKey: string) {
  const [byId] = await scoped.readSessions({ ids: [idOrKey] });
  if (byId) return byId;
  const [byKey] = await scoped.readSessions({ keys: [idOrKey] });
  if (!byKey) throw new NotFoundError("session", idOrKey);
  return byKey;
}
