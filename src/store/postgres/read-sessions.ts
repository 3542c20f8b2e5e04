import { type SessionRow, toSession } from "../record-rows.ts";
import type { SessionRecord } from "../records.ts";
import type { SessionPart, SessionQuery } from "../store.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";

/** Sessions of one scope: a foreign id reads exactly like a missing one. */
export async function readSessions(context: ScopeContext, sql: Sql, query: SessionQuery): Promise<SessionRecord[]> {
  const statement = sessionsStatement(context, query);
  return statement ? sessionsFrom(await sql.query<SessionRow>(statement.text, statement.values), query) : [];
}

/** The statement `readSessions` runs for `query` (null: nothing to read); `sessionsFrom` makes its rows the answer. */
export function sessionsStatement(
  context: ScopeContext,
  query: SessionQuery,
): { text: string; values: [string, readonly string[]] | [string, number | null, number] } | null {
  if ("ids" in query || "keys" in query) {
    const column = "ids" in query ? "id" : "session_key";
    const wanted = "ids" in query ? query.ids : query.keys;
    if (wanted.length === 0) return null;
    return {
      text: `SELECT * FROM sessions WHERE scope_key = $1 AND ${column} = ANY($2::text[])`,
      values: [context.key, wanted],
    };
  }
  return {
    text: "SELECT * FROM sessions WHERE scope_key = $1 ORDER BY time_ms, rowid LIMIT $2 OFFSET $3",
    values: [context.key, query.limit ?? null, query.offset ?? 0],
  };
}

/** The sessions `query` asked for, from the rows of its statement: by id or key in the order asked, else as read. */
export function sessionsFrom(rows: readonly SessionRow[], query: SessionQuery): SessionRecord[] {
  if ("ids" in query || "keys" in query) {
    const wanted = "ids" in query ? query.ids : query.keys;
    const byValue = new Map(rows.map((row) => ["ids" in query ? row.id : row.session_key, toSession(row)]));
    return wanted.flatMap((value) => byValue.get(value) ?? []);
  }
  return rows.map(toSession);
}

export async function sessionRowByKey(context: ScopeContext, sql: Sql, key: string): Promise<SessionRow | undefined> {
  const [row] = await sql.query<SessionRow>("SELECT * FROM sessions WHERE scope_key = $1 AND session_key = $2", [
    context.key,
    key,
  ]);
  return row;
}

/** The parts these sessions were appended in, by session id, each session's ordered by first turn. */
export async function readSessionParts(
  context: ScopeContext,
  sql: Sql,
  sessionIds: readonly string[],
): Promise<Map<string, SessionPart[]>> {
  if (sessionIds.length === 0) return new Map();
  const rows = await sql.query<{
    id: string;
    part_key: string;
    first_turn: number;
    turn_count: number;
    created_ms: number;
  }>(
    `SELECT s.id, p.part_key, p.first_turn, p.turn_count, p.created_ms FROM session_parts p
     JOIN sessions s ON s.rowid = p.session_rowid
     WHERE s.scope_key = $1 AND s.id = ANY($2::text[]) ORDER BY s.id, p.first_turn, p.part_key`,
    [context.key, [...sessionIds]],
  );
  const parts = new Map<string, SessionPart[]>();
  for (const row of rows) {
    const list = parts.get(row.id) ?? [];
    list.push({
      partKey: row.part_key,
      firstTurn: Number(row.first_turn),
      turnCount: Number(row.turn_count),
      createdMs: Number(row.created_ms),
    });
    parts.set(row.id, list);
  }
  return parts;
}
