import { NotFoundError } from "../core/errors.ts";
import type { VectorSpaces } from "../models/vector-spaces.ts";
import { type ForgetPlan, IndexVersionConflict } from "../store/index-records.ts";
import type { ForgetResult, ForgetTarget } from "../store/records.ts";
import type { ScopedStore } from "../store/store.ts";
import { maxPlanAttempts, replanBackoff } from "./commit-session.ts";
import { planForget, planForgetAll, survivorsToRead } from "./forget-plan.ts";
import { withStoredVectors } from "./incoming.ts";

/**
 * Forget, planned then applied like a write: read the index as it stands, plan its repair with the
 * pure `planForget`, and let the store delete the raw evidence and apply the plan in one
 * transaction. If another writer changed the index in between, plan again.
 */
export async function forgetWithRepair(
  scoped: ScopedStore,
  target: ForgetTarget,
  spaces: VectorSpaces,
): Promise<ForgetResult> {
  for (let attempt = 1; ; attempt++) {
    const plan = await planFor(scoped, target, spaces);
    try {
      return await scoped.forget({ target, plan });
    } catch (error) {
      if (!(error instanceof IndexVersionConflict) || attempt >= maxPlanAttempts) throw error;
      await replanBackoff(attempt);
    }
  }
}

async function planFor(scoped: ScopedStore, target: ForgetTarget, spaces: VectorSpaces): Promise<ForgetPlan> {
  const state = await scoped.readIndex({ activeOnly: false });
  const forgotten = new Set(await targetRawNodes(scoped, target));
  if ("all" in target) return planForgetAll(state, [...forgotten]);
  const ids = survivorsToRead(state, forgotten);
  const nodes = await withStoredVectors(scoped, await scoped.readRawNodes({ ids }), {
    text: spaces.text.name,
    image: spaces.image?.name ?? null,
  });
  const survivors = new Map(nodes.map((node) => [node.ref, node]));
  return planForget(state, forgotten, survivors);
}

/** The raw nodes a target covers now; an unknown session or raw node is a `NotFoundError`. */
async function targetRawNodes(scoped: ScopedStore, target: ForgetTarget): Promise<string[]> {
  if ("rawNode" in target) {
    const [node] = await scoped.readRawNodes({ ids: [target.rawNode] });
    if (!node) throw new NotFoundError("raw node", target.rawNode);
    return [node.id];
  }
  const sessions =
    "all" in target
      ? await scoped.readSessions({})
      : await sessionByIdOrKey(scoped, target.session).then((session) => [session]);
  const ids: string[] = [];
  for (const session of sessions) {
    for (const node of await scoped.readRawNodes({ sessionId: session.id })) ids.push(node.id);
  }
  return ids;
}

/** A session named by its id, else by its key (the caller's own id); ids win, as everywhere. */
export async function sessionByIdOrKey(scoped: ScopedStore, idOrKey: string) {
  const [byId] = await scoped.readSessions({ ids: [idOrKey] });
  if (byId) return byId;
  const [byKey] = await scoped.readSessions({ keys: [idOrKey] });
  if (!byKey) throw new NotFoundError("session", idOrKey);
  return byKey;
}
