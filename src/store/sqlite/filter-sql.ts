import type { SearchFilters } from "../records.ts";
import { numbers } from "./record-rows.ts";
import type { ScopeContext } from "./scope-context.ts";

/** Search filters as SQL: `AND …` clauses to append to a WHERE, with their parameters in order. */
export interface FilterSql {
  readonly sql: string;
  readonly params: unknown[];
}

/** Rowid that no session has: keeps `IN (…)` valid, and empty, when no session key matches. */
const noSessionRowid = -1;

export function hasFilters(filters: SearchFilters | undefined): boolean {
  return Boolean(
    filters?.sessionKeys?.length ||
      filters?.speakers?.length ||
      filters?.timeFromMs !== undefined ||
      filters?.timeToMs !== undefined,
  );
}

/** Filters on the `raw_nodes` table aliased `alias`. */
export function filterSql(context: ScopeContext, filters: SearchFilters | undefined, alias: string): FilterSql {
  const clauses: string[] = [];
  const params: unknown[] = [];
  if (filters?.sessionKeys?.length) {
    clauses.push(
      `${alias}.session_rowid IN (SELECT rowid FROM sessions WHERE scope_key = ? AND session_key IN (SELECT value FROM json_each(?)))`,
    );
    params.push(context.key, JSON.stringify(filters.sessionKeys));
  }
  if (filters?.timeFromMs !== undefined) {
    clauses.push(`${alias}.time_ms >= ?`);
    params.push(filters.timeFromMs);
  }
  if (filters?.timeToMs !== undefined) {
    clauses.push(`${alias}.time_ms <= ?`);
    params.push(filters.timeToMs);
  }
  if (filters?.speakers?.length) {
    clauses.push(`${alias}.speaker IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(filters.speakers));
  }
  return { sql: andAll(clauses), params };
}

/** Filters on a vec0 table: vec0 filters only on its own metadata columns, with literal lists. */
export function vectorFilterSql(context: ScopeContext, filters: SearchFilters | undefined): FilterSql {
  const clauses: string[] = [];
  const params: unknown[] = [];
  if (filters?.sessionKeys?.length) {
    const rowids = numbers(
      context.db
        .prepare("SELECT rowid FROM sessions WHERE scope_key = ? AND session_key IN (SELECT value FROM json_each(?))")
        .pluck()
        .all(context.key, JSON.stringify(filters.sessionKeys)),
    );
    const list = rowids.length > 0 ? rowids : [noSessionRowid];
    clauses.push(`session_rowid IN (${list.map(() => "?").join(", ")})`);
    params.push(...list.map((rowid) => BigInt(rowid)));
  }
  if (filters?.timeFromMs !== undefined) {
    clauses.push("time_ms >= ?");
    params.push(BigInt(filters.timeFromMs));
  }
  if (filters?.timeToMs !== undefined) {
    clauses.push("time_ms <= ?");
    params.push(BigInt(filters.timeToMs));
  }
  if (filters?.speakers?.length) {
    clauses.push(`speaker IN (${filters.speakers.map(() => "?").join(", ")})`);
    params.push(...filters.speakers);
  }
  return { sql: andAll(clauses), params };
}

function andAll(clauses: readonly string[]): string {
  return clauses.map((clause) => `AND ${clause}`).join(" ");
}
