import { InputError, StoreError } from "../../core/errors.ts";
import { vectorFromBytes } from "../../core/vectors.ts";
import {
  type NotifierRuleState,
  type VideoItem,
  type VideoItemKind,
  type VideoItemQuery,
  type VideoWrite,
  videoItemColumns,
} from "../video-records.ts";
import { writeAudit } from "./audit-events.ts";
import type { ScopeContext } from "./scope-context.ts";

/** Video memory rows (migration 6): items and the raw nodes each derives from, bound to the scope key. */
interface ItemRow {
  id: string;
  kind: VideoItemKind;
  stream: string | null;
  entity_id: string | null;
  start_ms: number;
  end_ms: number;
  text: string;
  data: string;
  vector: Buffer | null;
  sources: string;
}

export function commitVideo(context: ScopeContext, write: VideoWrite): void {
  const { db, key } = context;
  try {
    db.transaction(() => {
      const sources = [...new Set(write.put.flatMap((item) => item.sources))];
      if (sources.length > 0) {
        const known = new Set(
          db
            .prepare("SELECT id FROM raw_nodes WHERE scope_key = ? AND id IN (SELECT value FROM json_each(?))")
            .pluck()
            .all(key, JSON.stringify(sources)) as string[],
        );
        const unknown = sources.find((id) => !known.has(id));
        if (unknown) throw new InputError("sources", `raw node ${unknown} not found`);
      }
      const removeItem = db.prepare("DELETE FROM video_items WHERE scope_key = ? AND id = ?");
      const removeSources = db.prepare("DELETE FROM video_sources WHERE scope_key = ? AND item_id = ?");
      for (const id of [...write.remove, ...write.put.map((item) => item.id)]) {
        removeItem.run(key, id);
        removeSources.run(key, id);
      }
      const insert = db.prepare(
        `INSERT INTO video_items (scope_key, id, kind, stream, entity_id, start_ms, end_ms, text, data, vector)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const insertSource = db.prepare(
        "INSERT OR IGNORE INTO video_sources (scope_key, item_id, raw_node_id) VALUES (?, ?, ?)",
      );
      for (const item of write.put) {
        insert.run(key, ...videoItemColumns(item));
        for (const source of item.sources) insertSource.run(key, item.id, source);
      }
      // A removed rule's notifier record goes with it; a write's record replaces its rules' rows.
      const forgetRule = db.prepare("DELETE FROM video_notifier_state WHERE scope_key = ? AND rule_id = ?");
      for (const id of write.remove) forgetRule.run(key, id);
      if (write.notifier) {
        const save = db.prepare(
          `INSERT OR REPLACE INTO video_notifier_state (scope_key, stream, rule_id, holding, last_sent_ms, event, sent_in_event)
           VALUES (?, ?, ?, ?, ?, ?, ?)`,
        );
        for (const rule of write.notifier.rules)
          save.run(
            key,
            write.notifier.stream,
            rule.ruleId,
            rule.holding ? 1 : 0,
            rule.lastSentMs,
            rule.event,
            rule.sentInEvent,
          );
      }
      for (const audit of write.audits) writeAudit(context, audit.action, audit.subject, audit.details);
    }).immediate();
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new StoreError("commitVideo", error);
  }
}

export function readVideoItems(context: ScopeContext, query: VideoItemQuery): VideoItem[] {
  const where = ["i.scope_key = ?"];
  const params: unknown[] = [context.key];
  if (query.kinds?.length === 1) {
    // One kind as an equality: the (scope, kind, start) index then gives the order, and a limit stops the scan.
    where.push("i.kind = ?");
    params.push(query.kinds[0]);
  } else if (query.kinds) {
    where.push("i.kind IN (SELECT value FROM json_each(?))");
    params.push(JSON.stringify(query.kinds));
  }
  if (query.ids) {
    where.push("i.id IN (SELECT value FROM json_each(?))");
    params.push(JSON.stringify(query.ids));
  }
  if (query.entityIds) {
    where.push("i.entity_id IN (SELECT value FROM json_each(?))");
    params.push(JSON.stringify(query.entityIds));
  }
  if (query.stream !== undefined) {
    where.push("i.stream = ?");
    params.push(query.stream);
  }
  if (query.startsAt) {
    where.push("i.start_ms IN (SELECT value FROM json_each(?))");
    params.push(JSON.stringify(query.startsAt));
  }
  const order = query.newestFirst ? "i.start_ms DESC, i.id DESC" : "i.start_ms, i.id";
  const rows = context.db
    .prepare(
      `SELECT i.*, (SELECT json_group_array(raw_node_id) FROM video_sources s
                    WHERE s.scope_key = i.scope_key AND s.item_id = i.id) AS sources
       FROM video_items i WHERE ${where.join(" AND ")} ORDER BY ${order} LIMIT ? OFFSET ?`,
    )
    .all(...params, query.limit ?? -1, query.offset ?? 0) as ItemRow[];
  return rows.map(toItem);
}

export function readNotifierStreams(context: ScopeContext): string[] {
  return context.db
    .prepare("SELECT DISTINCT stream FROM video_notifier_state WHERE scope_key = ? ORDER BY stream")
    .pluck()
    .all(context.key) as string[];
}

export function readNotifierState(context: ScopeContext, stream: string): NotifierRuleState[] {
  const rows = context.db
    .prepare(
      `SELECT rule_id, holding, last_sent_ms, event, sent_in_event FROM video_notifier_state
       WHERE scope_key = ? AND stream = ? ORDER BY rule_id`,
    )
    .all(context.key, stream) as {
    rule_id: string;
    holding: number;
    last_sent_ms: number | null;
    event: number;
    sent_in_event: number;
  }[];
  return rows.map((row) => ({
    ruleId: row.rule_id,
    holding: row.holding === 1,
    lastSentMs: row.last_sent_ms,
    event: row.event,
    sentInEvent: row.sent_in_event,
  }));
}

/**
 * Inside a forget's transaction: removes every item derived from a forgotten raw node (semantic facts
 * and notifications included), then every unnamed entity left with no slot and no observation, with
 * whatever else names it. Returns how many items went.
 */
export function forgetVideoItems(context: ScopeContext, rawNodeIds: readonly string[], all: boolean): number {
  const { db, key } = context;
  if (all) {
    db.prepare("DELETE FROM video_sources WHERE scope_key = ?").run(key);
    db.prepare("DELETE FROM video_notifier_state WHERE scope_key = ?").run(key);
    return db.prepare("DELETE FROM video_items WHERE scope_key = ?").run(key).changes;
  }
  const items = db
    .prepare(
      "SELECT DISTINCT item_id FROM video_sources WHERE scope_key = ? AND raw_node_id IN (SELECT value FROM json_each(?))",
    )
    .pluck()
    .all(key, JSON.stringify(rawNodeIds)) as string[];
  const removeItem = db.prepare("DELETE FROM video_items WHERE scope_key = ? AND id = ?");
  const removeSources = db.prepare("DELETE FROM video_sources WHERE scope_key = ? AND item_id = ?");
  let removed = 0;
  for (const id of items) {
    removed += removeItem.run(key, id).changes;
    removeSources.run(key, id);
  }
  if (removed === 0) return 0;
  // Only evidence keeps an entity: its consolidation counter and facts go with it.
  const orphans = db
    .prepare(
      `SELECT e.id FROM video_items e WHERE e.scope_key = ? AND e.kind = 'entity' AND e.text = ''
       AND NOT EXISTS (SELECT 1 FROM video_items o WHERE o.scope_key = e.scope_key AND o.entity_id = e.id
                       AND o.kind IN ('slot', 'observation'))`,
    )
    .pluck()
    .all(key) as string[];
  const belongings = db
    .prepare("SELECT id FROM video_items WHERE scope_key = ? AND entity_id IN (SELECT value FROM json_each(?))")
    .pluck()
    .all(key, JSON.stringify(orphans)) as string[];
  for (const id of [...orphans, ...belongings]) {
    removed += removeItem.run(key, id).changes;
    removeSources.run(key, id);
  }
  return removed;
}

function toItem(row: ItemRow): VideoItem {
  return {
    id: row.id,
    kind: row.kind,
    stream: row.stream,
    entityId: row.entity_id,
    startMs: row.start_ms,
    endMs: row.end_ms,
    text: row.text,
    data: JSON.parse(row.data) as Record<string, unknown>,
    vector: row.vector ? vectorFromBytes(row.vector) : null,
    sources: JSON.parse(row.sources) as string[],
  };
}
