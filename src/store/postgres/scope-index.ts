import { StoreError } from "../../core/errors.ts";
import type { IndexEntry, IndexOp, MaintenancePlan } from "../index-records.ts";
import type { AuditEvent } from "../records.ts";
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
  const statement = indexStatusStatement(context);
  return indexStatusFrom(await sql.query<IndexStatusRow>(statement.text, statement.values));
}

/** The statement `indexStatus` runs; `indexStatusFrom` reads its row. */
export function indexStatusStatement(context: ScopeContext): { text: string; values: [string] } {
  return { text: "SELECT version, needs_rebuild FROM index_state WHERE scope_key = $1", values: [context.key] };
}

export interface IndexStatusRow {
  readonly version: number;
  readonly needs_rebuild: boolean;
}

export function indexStatusFrom(rows: readonly IndexStatusRow[]): { version: number; needsRebuild: boolean } {
  const [row] = rows;
  return { version: Number(row?.version ?? 0), needsRebuild: row?.needs_rebuild ?? false };
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
  const resolve = (pointers: readonly string[]) => resolvePointers(context, sql, pointers, "applyIndexPlan");
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

/**
 * A scope's index and audit log as another store holds them (`ScopedStore.restoreIndexAndAudit`):
 * both replaced in one transaction, entries with their pointers in order, events with their ids
 * and times. The version moves past the one it had, so no plan made before can apply after.
 */
export async function restoreIndexAndAudit(
  context: ScopeContext,
  sql: Sql,
  index: {
    readonly entries: readonly IndexEntry[];
    readonly spaces: { readonly text: string; readonly image: string | null };
  },
  audit: readonly AuditEvent[],
): Promise<void> {
  const version = await lockIndex(context, sql);
  await sql.query("INSERT INTO scopes (scope_key, tenant) VALUES ($1, $2) ON CONFLICT (scope_key) DO NOTHING", [
    context.key,
    context.tenant,
  ]);
  await forgetWholeIndex(context, sql);
  const restored = version + 1;
  await sql.query("UPDATE index_state SET version = $2, needs_rebuild = false WHERE scope_key = $1", [
    context.key,
    restored,
  ]);
  const ops = index.entries.flatMap((entry): IndexOp[] => [
    { op: "put", entry },
    { op: "link", entryId: entry.id, pointers: entry.pointers },
  ]);
  await applyPlan(
    context,
    sql,
    restored,
    { baseVersion: restored, ops, audits: [], warnings: [], overflowRepairs: 0 },
    index.spaces,
    async (pointers) => resolvePointers(context, sql, pointers, "restoreIndexAndAudit"),
  );
  await sql.query("DELETE FROM audit_events WHERE scope_key = $1", [context.key]);
  if (audit.length === 0) return;
  await sql.query(
    `INSERT INTO audit_events (id, tenant, scope_key, time_ms, action, subject, details)
     SELECT e.id, $1, $2, e.time_ms, e.action, e.subject, e.details
     FROM unnest($3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[]) WITH ORDINALITY
       AS e (id, time_ms, action, subject, details, position)
     ORDER BY e.position`,
    [
      context.tenant,
      context.key,
      audit.map((event) => event.id),
      audit.map((event) => Date.parse(event.time)),
      audit.map((event) => event.action),
      audit.map((event) => event.subject),
      audit.map((event) => JSON.stringify(event.details)),
    ],
  );
}

async function resolvePointers(
  context: ScopeContext,
  sql: Sql,
  pointers: readonly string[],
  operation: string,
): Promise<number[]> {
  const stored = await rawNodeRowids(context, sql, pointers);
  return pointers.map((pointer) => {
    const rowid = stored.get(pointer);
    if (rowid === undefined) throw new StoreError(operation, `index pointer ${pointer} names no raw node`);
    return rowid;
  });
}
