import { StoreError } from "../../core/errors.ts";
import type { MaintenancePlan } from "../index-records.ts";
import { writeAudit } from "./audit-events.ts";
import { applyPlan, forgetWholeIndex, lockIndex } from "./index-rows.ts";
import { rawNodeRowids } from "./read-raw-nodes.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";

/** The maintained index of one scope as a whole: its status, and plans applied outside a session's commit. */

export async function indexStatus(
  context: ScopeContext,
  sql: Sql,
): Promise<{ version: number; needsRebuild: boolean }> {
  const [row] = await sql.query<{ version: number; needs_rebuild: boolean }>(
    "SELECT version, needs_rebuild FROM index_state WHERE scope_key = $1",
    [context.key],
  );
  return { version: row?.version ?? 0, needsRebuild: row?.needs_rebuild ?? false };
}

/**
 * Applies a plan whose pointers name stored raw nodes, with its audit events; the caller runs it
 * in one transaction. With `replace`, the scope's index is emptied first and the plan applied to
 * the empty index (a rebuild).
 */
export async function applyIndexPlan(
  context: ScopeContext,
  sql: Sql,
  plan: MaintenancePlan,
  options: { readonly spaces: { readonly text: string; readonly image: string | null }; readonly replace: boolean },
): Promise<void> {
  const resolve = async (pointers: readonly string[]) => {
    const stored = await rawNodeRowids(context, sql, pointers);
    return pointers.map((pointer) => {
      const rowid = stored.get(pointer);
      if (rowid === undefined) throw new StoreError("applyIndexPlan", `index pointer ${pointer} names no raw node`);
      return rowid;
    });
  };
  const version = await lockIndex(context, sql);
  await sql.query("INSERT INTO scopes (scope_key, tenant) VALUES ($1, $2) ON CONFLICT (scope_key) DO NOTHING", [
    context.key,
    context.tenant,
  ]);
  if (!options.replace) {
    await applyPlan(context, sql, version, plan, options.spaces, resolve);
    for (const audit of plan.audits) await writeAudit(context, sql, audit.action, audit.subject, audit.details);
    return;
  }
  await forgetWholeIndex(context, sql);
  // Versions only grow, so a plan made before the rebuild can never apply after it.
  const rebuilt = version + 1;
  await sql.query("UPDATE index_state SET version = $2, needs_rebuild = false WHERE scope_key = $1", [
    context.key,
    rebuilt,
  ]);
  await applyPlan(context, sql, rebuilt, { ...plan, baseVersion: rebuilt }, options.spaces, resolve);
  for (const audit of plan.audits) await writeAudit(context, sql, audit.action, audit.subject, audit.details);
  await writeAudit(context, sql, "index.rebuild", "index", { entries: plan.ops.length, result: {} });
}
