import { InvariantError } from "../core/errors.ts";
import type { ForgetPlan, IndexEntry, IndexOp, IndexState, PointerRef } from "./index-records.ts";

/**
 * What applying a maintenance plan's ops means, on plain data: the reference every backend must
 * agree with (the conformance suite compares them), and how replay and the baselines apply plans
 * in memory. `resolve` maps `@n` pointers of a session being committed to raw-node ids.
 */
export function applyOps(
  state: IndexState,
  ops: readonly IndexOp[],
  resolve: (pointer: PointerRef) => string = (pointer) => pointer,
): IndexState {
  const entries = new Map(state.entries);
  for (const op of ops) {
    if (op.op === "drop") {
      entries.delete(op.entryId);
    } else if (op.op === "put") {
      const before = entries.get(op.entry.id);
      entries.set(op.entry.id, { ...op.entry, pointers: before?.pointers ?? [] });
    } else {
      const entry = entries.get(op.entryId);
      if (!entry) throw new InvariantError("link-target", `link to unknown entry ${op.entryId}`, [op.entryId]);
      // A pointer is linked once, however often an op names it (the store's rows are unique too).
      const known = new Set(entry.pointers);
      const added = [...new Set(op.pointers.map(resolve))].filter((pointer) => !known.has(pointer));
      entries.set(op.entryId, { ...entry, pointers: [...entry.pointers, ...added] });
    }
  }
  return { version: state.version + 1, entries };
}

/**
 * What applying a forget plan means, on plain data: the reference every backend must agree with
 * (the conformance suite compares them) and the checks every backend makes before it writes.
 * Unlinks may only name raw nodes the plan forgets; an entry may only be removed once it points at
 * nothing; a put never changes pointers. Throws `InvariantError` on a plan that breaks them.
 */
export function applyForgetPlan(state: IndexState, plan: ForgetPlan): IndexState {
  const forgotten = new Set(plan.rawNodeIds);
  const entries = new Map(state.entries);
  const entry = (id: string): IndexEntry => {
    const found = entries.get(id);
    if (!found) throw new InvariantError("forget plan", `names entry ${id}, which is not in the index`);
    return found;
  };
  for (const op of plan.ops) {
    if (op.op === "unlink") {
      const stray = op.pointers.find((pointer) => !forgotten.has(pointer));
      if (stray) throw new InvariantError("provenance", `forget may not unlink ${stray}: it is not being forgotten`);
      const drop = new Set(op.pointers);
      const current = entry(op.entryId);
      entries.set(op.entryId, { ...current, pointers: current.pointers.filter((pointer) => !drop.has(pointer)) });
    } else if (op.op === "put") {
      // A forget rewrites entries it found; it never creates one.
      entries.set(op.entry.id, { ...op.entry, pointers: entry(op.entry.id).pointers });
    } else {
      const { pointers } = entry(op.entryId);
      if (pointers.length > 0) {
        throw new InvariantError(
          "provenance",
          `forget may not remove entry ${op.entryId}: it still points at evidence`,
        );
      }
      entries.delete(op.entryId);
    }
  }
  return { version: state.version + 1, entries };
}
