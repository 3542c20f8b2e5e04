import { randomBytes } from "node:crypto";
import { keyedHash, redactEvent } from "../audit-redaction.ts";
import { type AuditRow, toAuditEvent } from "../record-rows.ts";
import type { AuditEvent } from "../records.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";

/** Appends an audit event of this scope; callers run it inside the transaction it describes. */
export async function writeAudit(
  context: ScopeContext,
  sql: Sql,
  action: string,
  subject: string,
  details: Record<string, unknown>,
): Promise<string> {
  const id = context.store.newId("aud");
  await sql.query(
    "INSERT INTO audit_events (id, tenant, scope_key, time_ms, action, subject, details) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    [id, context.tenant, context.key, context.store.now(), action, subject, JSON.stringify(details)],
  );
  return id;
}

/** Appends several events of this scope in one statement, stored in the order given. */
export async function writeAudits(
  context: ScopeContext,
  sql: Sql,
  events: readonly { readonly action: string; readonly subject: string; readonly details: Record<string, unknown> }[],
): Promise<void> {
  if (events.length === 0) return;
  await sql.query(
    `INSERT INTO audit_events (id, tenant, scope_key, time_ms, action, subject, details)
     SELECT a.id, $1, $2, $3, a.action, a.subject, a.details
     FROM unnest($4::text[], $5::text[], $6::text[], $7::text[]) WITH ORDINALITY AS a (id, action, subject, details, position)
     ORDER BY a.position`,
    auditParameters(context, events),
  );
}

/**
 * `$1`–`$7` of a statement that inserts `events` as `writeAudits` does (tenant, scope key, time, then
 * ids, actions, subjects and details as arrays): shared with statements that write audits beside other rows.
 */
export function auditParameters(
  context: ScopeContext,
  events: readonly { readonly action: string; readonly subject: string; readonly details: Record<string, unknown> }[],
): unknown[] {
  return [
    context.tenant,
    context.key,
    context.store.now(),
    events.map(() => context.store.newId("aud")),
    events.map((event) => event.action),
    events.map((event) => event.subject),
    events.map((event) => JSON.stringify(event.details)),
  ];
}

/** Newest first; no limit means all. */
export async function readAudit(
  context: ScopeContext,
  sql: Sql,
  options: { limit?: number; offset?: number },
): Promise<AuditEvent[]> {
  const rows = await sql.query<AuditRow>(
    "SELECT id, time_ms, action, subject, details FROM audit_events WHERE scope_key = $1 ORDER BY rowid DESC LIMIT $2 OFFSET $3",
    [context.key, options.limit ?? null, options.offset ?? 0],
  );
  return rows.map(toAuditEvent);
}

/**
 * `hmac-sha256:<hex>` of values under the tenant's audit secret (created on first use, one per
 * tenant, walled like its data): the same value always maps to the same text, but cannot be read back.
 */
export async function keyedHasher(context: ScopeContext, sql: Sql): Promise<(value: string) => string> {
  await sql.query("INSERT INTO audit_keys (tenant, secret) VALUES ($1, $2) ON CONFLICT (tenant) DO NOTHING", [
    context.tenant,
    randomBytes(32),
  ]);
  const [row] = await sql.query<{ secret: Buffer }>("SELECT secret FROM audit_keys WHERE tenant = $1", [
    context.tenant,
  ]);
  if (!row) throw new Error(`no audit secret for tenant ${context.tenant}`);
  const secret = row.secret;
  return (value) => keyedHash(secret, value);
}

/**
 * Rewrites this scope's audit events that name a forgotten key or id (as their subject, or as any
 * string value in their details): each such value becomes its keyed hash, and the event says so
 * (`redacted`). Returns the number of events rewritten.
 */
export async function redactAudit(
  context: ScopeContext,
  sql: Sql,
  forgotten: ReadonlySet<string>,
  hash: (value: string) => string,
): Promise<number> {
  if (forgotten.size === 0) return 0;
  const values = [...forgotten];
  // strpos over the JSON text narrows the scan to events that can name a forgotten value.
  const rows = await sql.query<{ rowid: number; subject: string; details: string }>(
    `SELECT rowid, subject, details FROM audit_events
     WHERE scope_key = $1 AND (subject = ANY($2::text[])
       OR EXISTS (SELECT 1 FROM unnest($2::text[]) AS f (value) WHERE strpos(details, f.value) > 0))`,
    [context.key, values],
  );
  let rewritten = 0;
  for (const row of rows) {
    const redacted = redactEvent(row, forgotten, hash);
    if (!redacted) continue;
    await sql.query("UPDATE audit_events SET subject = $1, details = $2 WHERE rowid = $3 AND scope_key = $4", [
      redacted.subject,
      redacted.details,
      row.rowid,
      context.key,
    ]);
    rewritten++;
  }
  return rewritten;
}

/** Deletes every audit event of this scope: a forgotten scope keeps only the forget event written next. */
export async function clearAudit(context: ScopeContext, sql: Sql): Promise<number> {
  const rows = await sql.query("DELETE FROM audit_events WHERE scope_key = $1 RETURNING 1", [context.key]);
  return rows.length;
}
