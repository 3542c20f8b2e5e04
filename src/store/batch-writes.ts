import { StoreError } from "../core/errors.ts";
import { type IndexOp, type MaintenancePlan, pendingPosition } from "./index-records.ts";
import type { SessionWrite } from "./records.ts";

/**
 * Several sessions committed in one transaction (`ScopedStore.commitSessions`). Their plans are
 * made one after another before anything is stored, so a later session's plan can point at raw
 * nodes of an earlier one (a consolidation folds an entry made a session before): in a batch,
 * `@n` names the n-th raw node of the whole batch, the writes' raw nodes counted in order. Each
 * backend commits write after write as `commitSession` would, turning the batch's pointers into
 * the single-session form first (`sessionPlan`): the write's own raw nodes back to `@n` of the
 * write, an earlier write's to the ids they were stored (or found, for a duplicate) under.
 */

/**
 * A batch's writes in single-session form, one at a time: a backend takes `write(i)`, commits it as
 * `commitSession` would, and reports the raw-node ids it got with `committed(i, ids)` before taking
 * the next.
 */
export class BatchPlans {
  readonly writes: readonly SessionWrite[];
  readonly #offsets: number[] = [];
  /** Raw-node ids of the writes committed so far, by batch position. */
  readonly #ids: (string | undefined)[] = [];

  constructor(writes: readonly SessionWrite[]) {
    this.writes = writes;
    let next = 0;
    for (const write of writes) {
      this.#offsets.push(next);
      next += write.rawNodes.length;
    }
  }

  /** Write `index` with its plan's pointers in single-session form (see `sessionPlan`). */
  write(index: number): SessionWrite {
    const write = this.writes[index];
    if (!write) throw new StoreError("commitSessions", `no write ${index} in this batch`);
    if (this.#ids.length !== this.#offsets[index]) {
      throw new StoreError("commitSessions", "a batch's writes are committed in order");
    }
    return sessionPlan(write, this.#offsets[index] ?? 0, this.#ids);
  }

  /** The ids write `index` was stored under; a duplicate's are the stored session's (the same turns). */
  committed(index: number, rawNodeIds: readonly string[]): void {
    const write = this.writes[index];
    if (!write) throw new StoreError("commitSessions", `no write ${index} in this batch`);
    for (let position = 0; position < write.rawNodes.length; position++) this.#ids.push(rawNodeIds[position]);
  }
}

/**
 * The write with its plan's pointers in single-session form. `earlier` holds the raw-node ids of
 * the writes before it, by batch position. A pointer past the write's own raw nodes (a later
 * write's) is refused: its raw nodes do not exist yet when this plan is applied.
 */
export function sessionPlan(
  write: SessionWrite,
  offset: number,
  earlier: readonly (string | undefined)[],
): SessionWrite {
  const { plan } = write.index;
  if (offset === 0 || !plan.ops.some((op) => op.op === "link")) return write;
  const end = offset + write.rawNodes.length;
  const resolve = (pointer: string): string => {
    if (!pointer.startsWith("@")) return pointer;
    const position = pendingPosition(pointer);
    if (position === undefined || position >= end) {
      throw new StoreError(
        "commitSessions",
        `index pointer ${pointer} names no raw node of this write or an earlier one`,
      );
    }
    if (position >= offset) return `@${position - offset}`;
    const id = earlier[position];
    if (id === undefined) throw new StoreError("commitSessions", `index pointer ${pointer} names no stored raw node`);
    return id;
  };
  const ops = plan.ops.map((op): IndexOp => (op.op === "link" ? { ...op, pointers: op.pointers.map(resolve) } : op));
  const resolved: MaintenancePlan = { ...plan, ops };
  return { ...write, index: { ...write.index, plan: resolved } };
}
