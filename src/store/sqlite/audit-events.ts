import { redactEvent } from "../audit-redaction.ts";
import { type AuditRow, toAuditEvent } from "../record-rows.ts";
import type { AuditEvent } from "../records.ts";
import type { ScopeContext } from "./scope-context.ts";
import { statement } from "./statements.ts";

/** Appends an audit event of this scope; callers run it inside the transaction it describes. */
export function writeAudit(
  context: ScopeContext,
  action: string,
  subject: string,
  details: Record<string, unknown>,
): string {
  const id = context.store.newId("aud");
  statement(
    context.db,
    "INSERT INTO audit_events (id, scope_key, time_ms, action, subject, details) VALUES (?, ?, ?, ?, ?, ?)",
  ).run(id, context.key, context.store.now(), action, subject, JSON.stringify(details));
  return id;
}

/** Newest first; no limit means all. */
export function readAudit(context: ScopeContext, options: { limit?: number; offset?: number }): AuditEvent[] {
  const rows = context.db
    .prepare("SELECT * FROM audit_events WHERE scope_key = ? ORDER BY rowid DESC LIMIT ? OFFSET ?")
    .all(context.key, options.limit ?? -1, options.offset ?? 0) as AuditRow[];
  return rows.map(toAuditEvent);
}

/**
 * Rewrites this scope's audit events that name a forgotten key or id (as their subject, or as any
 * string value in their details): each such value becomes its keyed hash, and the event says so
 * (`redacted`), so the log keeps what happened and its shape (the checker's entry ids and results
 * are untouched) without the forgotten identifiers. Returns the number of events rewritten.
 */
export function redactAudit(
  context: ScopeContext,
  forgotten: ReadonlySet<string>,
  hash: (value: string) => string,
): number {
  if (forgotten.size === 0) return 0;
  const values = JSON.stringify([...forgotten]);
  // instr() over the JSON text narrows the scan to events that can name a forgotten value.
  const rows = context.db
    .prepare(
      `SELECT rowid, subject, details FROM audit_events
       WHERE scope_key = ? AND (subject IN (SELECT value FROM json_each(?))
         OR EXISTS (SELECT 1 FROM json_each(?) AS forgotten WHERE instr(details, forgotten.value) > 0))`,
    )
    .all(context.key, values, values) as { rowid: number; subject: string; details: string }[];
  const update = context.db.prepare("UPDATE audit_events SET subject = ?, details = ? WHERE rowid = ?");
  let rewritten = 0;
  for (const row of rows) {
    const redacted = redactEvent(row, forgotten, hash);
    if (!redacted) continue;
    update.run(redacted.subject, redacted.details, row.rowid);
    rewritten++;
  }
  return rewritten;
}

/** Deletes every audit event of this scope: a forgotten scope keeps only the forget event written next. */
export function clearAudit(context: ScopeContext): number {
  return context.db.prepare("DELETE FROM audit_events WHERE scope_key = ?").run(context.key).changes;
}
