import type { Database, Statement } from "better-sqlite3";

/**
 * Prepared statements kept per connection and SQL text, so the hot paths (search, commit) do not
 * compile the same SQL on every call. A statement is returned in the row mode it was prepared for
 * and must not be switched (`pluck`, `raw`) by callers: another caller of the same text shares it.
 * SQLite recompiles a kept statement by itself when the schema changes under it.
 */
export type RowMode = "rows" | "pluck" | "raw";

/** Distinct SQL texts kept per connection; texts built per call (filters, id lists) come and go. */
const capacity = 512;
const caches = new WeakMap<Database, Map<string, Statement>>();

export function statement(db: Database, sql: string, mode: RowMode = "rows"): Statement {
  let cache = caches.get(db);
  if (!cache) {
    cache = new Map();
    caches.set(db, cache);
  }
  const key = `${mode}:${sql}`;
  const kept = cache.get(key);
  if (kept && !kept.busy) return kept;
  const prepared = db.prepare(sql);
  if (mode === "pluck") prepared.pluck();
  else if (mode === "raw") prepared.raw();
  // A busy statement (an open iterator) is left to its iterator; the new one takes its place.
  cache.delete(key);
  cache.set(key, prepared);
  const oldest = cache.keys().next();
  if (cache.size > capacity && !oldest.done) cache.delete(oldest.value);
  return prepared;
}
