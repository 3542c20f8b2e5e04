import type { ScopeStats } from "../records.ts";
import { numberOrUndefined } from "./record-rows.ts";
import type { ScopeContext } from "./scope-context.ts";

/** Row counts of one scope, for administration and the dashboard. */
export function scopeStats(context: ScopeContext): ScopeStats {
  const count = (sql: string) => numberOrUndefined(context.db.prepare(sql).pluck().get(context.key)) ?? 0;
  return {
    sessions: count("SELECT count(*) AS n FROM sessions WHERE scope_key = ?"),
    rawNodes: count("SELECT count(*) AS n FROM raw_nodes WHERE scope_key = ?"),
    images: count(
      "SELECT count(*) AS n FROM raw_node_images i JOIN raw_nodes r ON r.rowid = i.raw_node_rowid WHERE r.scope_key = ?",
    ),
    entries: count("SELECT count(*) AS n FROM index_entries WHERE scope_key = ? AND status = 'active'"),
    auditEvents: count("SELECT count(*) AS n FROM audit_events WHERE scope_key = ?"),
  };
}
