import type { AuditEvent } from "../records.ts";
import { type AuditRow, toAuditEvent } from "./record-rows.ts";
import type { ScopeContext } from "./scope-context.ts";

/** Appends an audit event of this scope; callers run it inside the transaction it describes. */
export function writeAudit(
  context: ScopeContext,
  action: string,
  subject: string,
  details: Record<string, unknown>,
): string {
  const id = context.store.newId("aud");
  context.db
    .prepare("INSERT INTO audit_events (id, scope_key, time_ms, action, subject, details) VALUES (?, ?, ?, ?, ?, ?)")
    .run(id, context.key, context.store.now(), action, subject, JSON.stringify(details));
  return id;
}

/** Newest first; no limit means all. */
export function readAudit(context: ScopeContext, options: { limit?: number; offset?: number }): AuditEvent[] {
  const rows = context.db
    .prepare("SELECT * FROM audit_events WHERE scope_key = ? ORDER BY rowid DESC LIMIT ? OFFSET ?")
    .all(context.key, options.limit ?? -1, options.offset ?? 0) as AuditRow[];
  return rows.map(toAuditEvent);
}
