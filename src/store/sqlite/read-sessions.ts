import { type SessionRow, toSession } from "../record-rows.ts";
import type { SessionRecord } from "../records.ts";
import type { SessionPart, SessionQuery } from "../store.ts";
import type { ScopeContext } from "./scope-context.ts";
import { statement } from "./statements.ts";

/** Sessions of one scope: a foreign id reads exactly like a missing one. */
export function sessionById(context: ScopeContext, id: string): SessionRecord | null {
  const row = statement(context.db, "SELECT * FROM sessions WHERE scope_key = ? AND id = ?").get(context.key, id) as
    | SessionRow
    | undefined;
  return row ? toSession(row) : null;
}

export function findSessionByKey(context: ScopeContext, key: string): SessionRecord | null {
  const row = sessionRowByKey(context, key);
  return row ? toSession(row) : null;
}

export function sessionRowByKey(context: ScopeContext, key: string): SessionRow | undefined {
  return statement(context.db, "SELECT * FROM sessions WHERE scope_key = ? AND session_key = ?").get(
    context.key,
    key,
  ) as SessionRow | undefined;
}

/** Oldest first; no limit unless one is given. */
export function listSessions(context: ScopeContext, options: { limit?: number; offset?: number }): SessionRecord[] {
  const rows = context.db
    .prepare("SELECT * FROM sessions WHERE scope_key = ? ORDER BY time_ms, rowid LIMIT ? OFFSET ?")
    .all(context.key, options.limit ?? -1, options.offset ?? 0) as SessionRow[];
  return rows.map(toSession);
}

/** Sessions by id, by key, or all of them in time order (paged). */
export function readSessions(context: ScopeContext, query: SessionQuery): SessionRecord[] {
  if ("ids" in query) return query.ids.flatMap((id) => sessionById(context, id) ?? []);
  if ("keys" in query) return query.keys.flatMap((key) => findSessionByKey(context, key) ?? []);
  return listSessions(context, query);
}

/** The parts these sessions were appended in, by session id, each session's ordered by first turn. */
export function readSessionParts(context: ScopeContext, sessionIds: readonly string[]): Map<string, SessionPart[]> {
  const read = context.db.prepare(
    `SELECT p.part_key, p.first_turn, p.turn_count, p.created_ms FROM session_parts p
     JOIN sessions s ON s.rowid = p.session_rowid
     WHERE s.scope_key = ? AND s.id = ? ORDER BY p.first_turn, p.part_key`,
  );
  const parts = new Map<string, SessionPart[]>();
  for (const id of new Set(sessionIds)) {
    const rows = read.all(context.key, id) as PartRow[];
    if (rows.length > 0) parts.set(id, rows.map(toPart));
  }
  return parts;
}

interface PartRow {
  part_key: string;
  first_turn: number;
  turn_count: number;
  created_ms: number;
}

function toPart(row: PartRow): SessionPart {
  return {
    partKey: row.part_key,
    firstTurn: Number(row.first_turn),
    turnCount: Number(row.turn_count),
    createdMs: Number(row.created_ms),
  };
}
