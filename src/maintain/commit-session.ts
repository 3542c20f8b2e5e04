import { setTimeout as sleep } from "node:timers/promises";
import type { VectorSpaces } from "../models/vector-spaces.ts";
import { IndexVersionConflict, type MaintenancePlan } from "../store/index-records.ts";
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
  for (let attempt = 1; ; attempt++) {
    // A stored session gets no plan, being a duplicate or a conflict; an append to it does.
    const plan =
      !write.append && (await scoped.readSessions({ keys: [write.key] })).length > 0
        ? emptyPlan()
        : await planMaintenance(await scoped.readIndex({ activeOnly: true }), incoming, context.policy, {
            bounds: context.config.bounds,
            newId: context.newId,
            nowMs: context.now(),
          });
    try {
      const result = await scoped.commitSession({ ...write, index: { plan, spaces: indexSpaces } });
      return { result, plan: result.duplicate ? emptyPlan() : plan };
    } catch (error) {
      if (!(error instanceof IndexVersionConflict) || attempt >= maxPlanAttempts) throw error;
      await replanBackoff(attempt);
    }
  }
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
): IncomingEntry[] {
  return buildIncomingEntries(
    write.key,
    write.rawNodes.map((node, index) => ({
      ref: `@${index}`,
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
