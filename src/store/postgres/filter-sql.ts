import type { SearchFilters } from "../records.ts";

/** Search filters as SQL: `AND …` clauses on a table with raw-node columns, numbering parameters from `next`. */
export interface FilterSql {
  readonly sql: string;
  readonly values: unknown[];
}

export function hasFilters(filters: SearchFilters | undefined): boolean {
  return Boolean(
    filters?.sessionKeys?.length ||
      filters?.speakers?.length ||
      filters?.timeFromMs !== undefined ||
      filters?.timeToMs !== undefined,
  );
}

/**
 * Filters on the table aliased `alias`, which has `scope_key`, `session_rowid`, `time_ms` and
 * `speaker` columns (raw nodes and vector rows both do). Parameters are numbered from `next`.
 */
export function filterSql(filters: SearchFilters | undefined, alias: string, next: number): FilterSql {
  const clauses: string[] = [];
  const values: unknown[] = [];
  const parameter = (value: unknown) => {
    values.push(value);
    return `$${next + values.length - 1}`;
  };
  if (filters?.sessionKeys?.length) {
    clauses.push(
      `${alias}.session_rowid IN (SELECT rowid FROM sessions WHERE scope_key = ${alias}.scope_key AND session_key = ANY(${parameter(filters.sessionKeys)}::text[]))`,
    );
  }
  if (filters?.timeFromMs !== undefined) clauses.push(`${alias}.time_ms >= ${parameter(filters.timeFromMs)}`);
  if (filters?.timeToMs !== undefined) clauses.push(`${alias}.time_ms <= ${parameter(filters.timeToMs)}`);
  if (filters?.speakers?.length) clauses.push(`${alias}.speaker = ANY(${parameter(filters.speakers)}::text[])`);
  return { sql: clauses.map((clause) => `AND ${clause}`).join(" "), values };
}
