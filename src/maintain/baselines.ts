import { itemAt } from "../core/narrow.ts";
import type { IndexEntry } from "../store/index-records.ts";
import type { JudgeView } from "./judge.ts";
import { closestPairs, type MaintenancePolicy, overflow } from "./ramu.ts";
import { entrySimilarity, type IncomingEntry, type WorkingIndex } from "./working-index.ts";

/**
 * The maintenance baselines of C3M §3.2, model-free, under the same bounds and over the same raw
 * nodes and embeddings as RAMU. Only the policy differs. They run in the harness; the store only
 * ever runs RAMU.
 */

/** No maintenance: every segment becomes an entry and the index grows without bound. */
export const unboundedPolicy: MaintenancePolicy = {
  name: "unbounded",
  bounded: false,
  async apply(index, incoming) {
    add(index, incoming);
  },
};

/** An unjudged Add, audited like every other action. */
function add(index: WorkingIndex, incoming: IncomingEntry): void {
  const entry = index.create(incoming, { lastAction: "add", relation: null });
  index.audit("index.add", entry.id, {
    pointers: incoming.pointers,
    relation: null,
    confidence: null,
    result: { entry: entry.id },
  });
}

/** What `addThen` promises its repair: the invariant an empty slot of a sorted pair would break. */
const twoActive = "repair-sees-two-active-entries";

/** Add, then repair while a bound is exceeded; `repair` always sees at least two active entries. */
function addThen(
  index: WorkingIndex,
  incoming: IncomingEntry,
  repair: (index: WorkingIndex, reason: string) => void,
): void {
  add(index, incoming);
  for (let reason = index.overBounds(); reason; reason = index.overBounds()) {
    if (index.active().length < 2) return;
    repair(index, reason);
  }
}

/** Folds `newer` into `older` (a summary of both), recorded as a consolidation with no judged relation. */
function fold(index: WorkingIndex, older: IndexEntry, newer: IndexEntry, action: string, reason: string): void {
  index.put({ ...index.get(newer.id), status: "merged", host: older.id, page: null, lastAction: action });
  const host = index.absorb(older.id, newer, { lastAction: action, relation: null });
  index.audit(`index.${action}`, host.id, {
    reason,
    pair: [older.id, newer.id],
    relation: null,
    confidence: null,
    result: { entry: host.id, merged: newer.id },
  });
}

/** ReSum: keep recent entries as they are; summarise the oldest block into one entry. */
export const resumPolicy: MaintenancePolicy = {
  name: "resum",
  bounded: true,
  async apply(index, incoming) {
    addThen(index, incoming, (working, reason) => {
      const byTime = working.active().sort((a, b) => a.timeStartMs - b.timeStartMs || a.id.localeCompare(b.id));
      fold(working, itemAt(byTime, 0, twoActive), itemAt(byTime, 1, twoActive), "summarise", reason);
    });
  },
};

/** MovieChat: merge the most similar pair of temporally adjacent entries. */
export const movieChatPolicy: MaintenancePolicy = {
  name: "moviechat",
  bounded: true,
  async apply(index, incoming) {
    addThen(index, incoming, (working, reason) => {
      const ordered = working.active().sort((a, b) => a.timeStartMs - b.timeStartMs || a.id.localeCompare(b.id));
      let best = { at: 0, similarity: Number.NEGATIVE_INFINITY };
      for (let at = 0; at + 1 < ordered.length; at++) {
        const similarity = entrySimilarity(itemAt(ordered, at, twoActive), itemAt(ordered, at + 1, twoActive));
        if (similarity > best.similarity) best = { at, similarity };
      }
      fold(
        working,
        itemAt(ordered, best.at, twoActive),
        itemAt(ordered, best.at + 1, twoActive),
        "adjacent-merge",
        reason,
      );
    });
  },
};

/**
 * Similarity at which MemRefine deletes rather than merges: the bar the comparator sets for a
 * near-duplicate (`sameVector`, 0.9); set with the baselines (5e72df4), not tuned.
 */
const memRefineDeleteSimilarity = 0.9;

/**
 * MemRefine-style: over the globally most similar pair, Delete the older of a near-duplicate pair,
 * else Merge it. Deletion drops pointers: this baseline shows what a lossy refinement costs.
 */
export function memRefinePolicy(deleteSimilarity = memRefineDeleteSimilarity): MaintenancePolicy {
  return {
    name: "memrefine",
    bounded: true,
    async apply(index, incoming) {
      addThen(index, incoming, (working, reason) => {
        const [pair] = closestPairs(working.active(), 1);
        if (!pair) return;
        const [older, newer] = pair.a.timeStartMs <= pair.b.timeStartMs ? [pair.a, pair.b] : [pair.b, pair.a];
        if (pair.similarity >= deleteSimilarity) {
          working.drop(older.id);
          working.audit("index.delete", older.id, {
            reason,
            similarity: pair.similarity,
            kept: newer.id,
            result: { deleted: older.id, pointersLost: older.pointers.length },
          });
        } else {
          fold(working, older, newer, "refine-merge", reason);
        }
      });
    },
  };
}

/** RAMU's own overflow without judging: used to show what the relation gate adds (an ablation). */
export const overflowOnlyPolicy: MaintenancePolicy = {
  name: "overflow-only",
  bounded: true,
  async apply(index, incoming: IncomingEntry, _view: JudgeView) {
    addThen(index, incoming, (working, reason) => {
      const [pair] = closestPairs(working.active(), 1);
      if (pair) overflow(working, pair, reason);
    });
  },
};
