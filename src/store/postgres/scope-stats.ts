import type { ScopeStats } from "../records.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";

/** Row counts of one scope, for administration and the dashboard. One statement. */
export async function scopeStats(context: ScopeContext, sql: Sql): Promise<ScopeStats> {
  const [row] = await sql.query<ScopeStats>(
    `SELECT
       (SELECT count(*) FROM sessions WHERE scope_key = $1) AS "sessions",
       (SELECT count(*) FROM raw_nodes WHERE scope_key = $1) AS "rawNodes",
       (SELECT count(*) FROM raw_node_images WHERE scope_key = $1) AS "images",
       (SELECT count(*) FROM index_entries WHERE scope_key = $1 AND status = 'active') AS "entries",
       (SELECT count(*) FROM audit_events WHERE scope_key = $1) AS "auditEvents"`,
    [context.key],
  );
  return row ?? { sessions: 0, rawNodes: 0, images: 0, entries: 0, auditEvents: 0 };
}
