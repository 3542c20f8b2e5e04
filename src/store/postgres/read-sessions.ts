import { type SessionRow, toSession } from "../record-rows.ts";
import type { SessionRecord } from "../records.ts";
import type { SessionQuery } from "../store.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";

/** Sessions of one scope: a foreign id reads exactly like a missing one. */
export async function readSessions(context: ScopeContext, sql: Sql, query: SessionQuery): Promise<SessionRecord[]> {
  if ("ids" in query || "keys" in query) {
    const column = "ids" in query ? "id" : "session_key";
    const wanted = "ids" in query ? query.ids : query.keys;
    if (wanted.length === 0) return [];
    const rows = await sql.query<SessionRow>(
      `SELECT * FROM sessions WHERE scope_key = $1 AND ${column} = ANY($2::text[])`,
      [context.key, wanted],
    );
    const byValue = new Map(rows.map((row) => ["ids" in query ? row.id : row.session_key, toSession(row)]));
    return wanted.flatMap((value) => byValue.get(value) ?? []);
  }
  const rows = await sql.query<SessionRow>(
    "SELECT * FROM sessions WHERE scope_key = $1 ORDER BY time_ms, rowid LIMIT $2 OFFSET $3",
    [context.key, query.limit ?? null, query.offset ?? 0],
  );
  return rows.map(toSession);
}

export async function sessionRowByKey(context: ScopeContext, sql: Sql, key: string): Promise<SessionRow | undefined> {
  const [row] = await sql.query<SessionRow>("SELECT * FROM sessions WHERE scope_key = $1 AND session_key = $2", [
    context.key,
    key,
  ]);
  return row;
}
