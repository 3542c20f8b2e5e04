import type { Database } from "better-sqlite3";
import { CairnError, StoreError } from "../../core/errors.ts";
import type { IndexEntry, IndexOp, MaintenancePlan } from "../index-records.ts";
import type { AuditEvent } from "../records.ts";
import { writeAudit } from "./audit-events.ts";
import { applyPlan, forgetWholeIndex, indexVersion } from "./index-rows.ts";
import { rawNodeRowid } from "./read-raw-nodes.ts";
import type { ScopeContext } from "./scope-context.ts";
import { statement } from "./statements.ts";

/** The maintained index of one scope as a whole: its status, and plans applied outside a session's commit. */

/** The index version, and whether the store was migrated from a version without a maintained index and must replay it. */
export function indexStatus(context: ScopeContext): { version: number; needsRebuild: boolean } {
  const row = statement(context.db, "SELECT version, needs_rebuild FROM index_state WHERE scope_key = ?").get(
    context.key,
  ) as { version: number; needs_rebuild: number } | undefined;
  return { version: row?.version ?? 0, needsRebuild: row?.needs_rebuild === 1 };
}

/**
 * Applies a plan whose pointers name stored raw nodes, with its audit events, atomically. With
 * `replace`, the scope's index is emptied first and the plan applied to the empty index (a rebuild).
 */
export function applyIndexPlan(
  context: ScopeContext,
  plan: MaintenancePlan,
  options: { readonly spaces: { readonly text: string; readonly image: string | null }; readonly replace: boolean },
): void {
  const { db, key } = context;
  const resolve = (pointer: string) => {
    const rowid = rawNodeRowid(context, pointer);
    if (rowid === undefined) throw new StoreError("applyIndexPlan", `index pointer ${pointer} names no raw node`);
    return rowid;
  };
  try {
    db.transaction(() => {
      if (!options.replace) {
        applyPlan(db, key, plan, options.spaces, resolve);
        for (const audit of plan.audits) writeAudit(context, audit.action, audit.subject, audit.details);
        return;
      }
      const version = emptyIndex(db, key);
      applyPlan(db, key, { ...plan, baseVersion: version }, options.spaces, resolve);
      for (const audit of plan.audits) writeAudit(context, audit.action, audit.subject, audit.details);
      writeAudit(context, "index.rebuild", "index", { entries: plan.ops.length, result: {} });
    }).immediate();
  } catch (error) {
    if (CairnError.is(error) && error.code !== "store") throw error;
    throw error instanceof StoreError ? error : new StoreError("applyIndexPlan", error);
  }
}

/**
 * A scope's index and audit log as another store holds them (`ScopedStore.restoreIndexAndAudit`):
 * both replaced in one transaction, entries with their pointers in order, events with their ids
 * and times. The version moves past the one it had, so no plan made before can apply after.
 */
export function restoreIndexAndAudit(
  context: ScopeContext,
  index: {
    readonly entries: readonly IndexEntry[];
    readonly spaces: { readonly text: string; readonly image: string | null };
  },
  audit: readonly AuditEvent[],
): void {
  const { db, key } = context;
  const resolve = (pointer: string) => {
    const rowid = rawNodeRowid(context, pointer);
    if (rowid === undefined) throw new StoreError("restoreIndexAndAudit", `index pointer ${pointer} names no raw node`);
    return rowid;
  };
  try {
    db.transaction(() => {
      const version = emptyIndex(db, key);
      const ops = index.entries.flatMap((entry): IndexOp[] => [
        { op: "put", entry },
        { op: "link", entryId: entry.id, pointers: entry.pointers },
      ]);
      applyPlan(
        db,
        key,
        { baseVersion: version, ops, audits: [], warnings: [], overflowRepairs: 0 },
        index.spaces,
        resolve,
      );
      statement(db, "DELETE FROM audit_events WHERE scope_key = ?").run(key);
      const insert = statement(
        db,
        "INSERT INTO audit_events (id, scope_key, time_ms, action, subject, details) VALUES (?, ?, ?, ?, ?, ?)",
      );
      for (const event of audit) {
        insert.run(event.id, key, Date.parse(event.time), event.action, event.subject, JSON.stringify(event.details));
      }
    }).immediate();
  } catch (error) {
    if (CairnError.is(error) && error.code !== "store") throw error;
    throw error instanceof StoreError ? error : new StoreError("restoreIndexAndAudit", error);
  }
}

/**
 * Empties the scope's index for a rebuild or a restore and returns the version the new index is
 * written against. Versions only grow, so a plan made before can never apply after.
 */
function emptyIndex(db: Database, key: string): number {
  forgetWholeIndex(db, key);
  const version = indexVersion(db, key) + 1;
  statement(
    db,
    `INSERT INTO index_state (scope_key, version, needs_rebuild) VALUES (?, ?, 0)
     ON CONFLICT (scope_key) DO UPDATE SET version = excluded.version, needs_rebuild = 0`,
  ).run(key, version);
  return version;
}
