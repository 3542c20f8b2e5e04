import { StoreError } from "../../core/errors.ts";
import type { MaintenancePlan } from "../index-records.ts";
import type { Entry } from "../records.ts";
import { writeAudit } from "./audit-events.ts";
import { applyPlan, forgetWholeIndex, indexVersion, readIndex, toPublicEntry } from "./index-rows.ts";
import { rawNodeRowid } from "./read-raw-nodes.ts";
import type { ScopeContext } from "./scope-context.ts";

/** The maintained index of one scope, through the scoped store: listing it and rebuilding it whole. */

/** Entries of the active index (all statuses unless `status` is given), oldest first. */
export function listEntries(
  context: ScopeContext,
  options: { limit?: number; offset?: number; status?: Entry["status"] },
): Entry[] {
  const state = readIndex(context.db, context.key, { activeOnly: options.status === "active" });
  const entries = [...state.entries.values()].filter((entry) => !options.status || entry.status === options.status);
  const offset = options.offset ?? 0;
  return entries
    .sort((a, b) => a.timeStartMs - b.timeStartMs || a.id.localeCompare(b.id))
    .slice(offset, options.limit === undefined ? undefined : offset + options.limit)
    .map(toPublicEntry);
}

/** True when the store was migrated from a version without a maintained index and must replay it. */
export function indexNeedsRebuild(context: ScopeContext): boolean {
  const flag = context.db.prepare("SELECT needs_rebuild FROM index_state WHERE scope_key = ?").pluck().get(context.key);
  return flag === 1;
}

/** Replaces the scope's index with the result of `plan` applied to an empty index, atomically. */
export function rebuildIndex(
  context: ScopeContext,
  plan: MaintenancePlan,
  spaces: { text: string; image: string | null },
): void {
  const { db, key } = context;
  try {
    db.transaction(() => {
      forgetWholeIndex(db, key);
      // Versions only grow, so a plan made before the rebuild can never apply after it.
      const version = indexVersion(db, key) + 1;
      db.prepare(
        `INSERT INTO index_state (scope_key, version, needs_rebuild) VALUES (?, ?, 0)
         ON CONFLICT (scope_key) DO UPDATE SET version = excluded.version, needs_rebuild = 0`,
      ).run(key, version);
      applyPlan(db, key, { ...plan, baseVersion: version }, spaces, (pointer) => {
        const rowid = rawNodeRowid(context, pointer);
        if (rowid === undefined) throw new StoreError("rebuildIndex", `index pointer ${pointer} names no raw node`);
        return rowid;
      });
      for (const audit of plan.audits) writeAudit(context, audit.action, audit.subject, audit.details);
      writeAudit(context, "index.rebuild", "index", { entries: plan.ops.length, result: {} });
    }).immediate();
  } catch (error) {
    throw new StoreError("rebuildIndex", error);
  }
}
