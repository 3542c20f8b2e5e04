import type BetterSqlite3 from "better-sqlite3";

/** Every tenant's FTS5 tables in a SQLite store (one pair per tenant: see src/store/sqlite/tenants.ts). */
export function tenantFtsTables(db: BetterSqlite3.Database): string[] {
  const tokens = db.prepare("SELECT token FROM tenants ORDER BY token").pluck().all() as string[];
  return tokens.flatMap((token) => [`fts_text_${token}`, `fts_image_text_${token}`]);
}

/** FTS5's own consistency check of each table: throws on a corrupt index. */
export function checkFtsIntegrity(db: BetterSqlite3.Database): string[] {
  const tables = tenantFtsTables(db);
  for (const table of tables) db.prepare(`INSERT INTO ${table} (${table}) VALUES ('integrity-check')`).run();
  return tables;
}
