import { InputError } from "../../core/errors.ts";
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
import type { Sql } from "./tenant-transaction.ts";

/** Video memory rows (migration 4): items and the raw nodes each derives from, bound to the scope key. */
interface ItemRow {
  id: string;
  kind: VideoItemKind;
  stream: string | null;
  entity_id: string | null;
  start_ms: string;
  end_ms: string;
  text: string;
  data: string;
  vector: Buffer | null;
  sources: string[];
}

/** The caller runs it in one transaction, under the scope's write lock. */
export async function commitVideo(context: ScopeContext, sql: Sql, write: VideoWrite): Promise<void> {
  const { key, tenant } = context;
  const sources = [...new Set(write.put.flatMap((item) => item.sources))];
  if (sources.length > 0) {
    const known = new Set(
      (
        await sql.query<{ id: string }>("SELECT id FROM raw_nodes WHERE scope_key = $1 AND id = ANY($2::text[])", [
          key,
          sources,
        ])
      ).map((row) => row.id),
    );
    const unknown = sources.find((id) => !known.has(id));
    if (unknown) throw new InputError("sources", `raw node ${unknown} not found`);
  }
  const replaced = [...write.remove, ...write.put.map((item) => item.id)];
  await sql.query("DELETE FROM video_items WHERE scope_key = $1 AND id = ANY($2::text[])", [key, replaced]);
  for (const item of write.put) {
    await sql.query(
      `INSERT INTO video_items (tenant, scope_key, id, kind, stream, entity_id, start_ms, end_ms, text, data, vector)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [tenant, key, ...videoItemColumns(item)],
    );
    if (item.sources.length > 0) {
      await sql.query(
        `INSERT INTO video_sources (tenant, scope_key, item_id, raw_node_id)
         SELECT $1, $2, $3, s FROM unnest($4::text[]) AS s ON CONFLICT DO NOTHING`,
        [tenant, key, item.id, [...item.sources]],
      );
    }
  }
  // A removed rule's notifier record goes with it; a write's record replaces its rules' rows.
  if (write.remove.length > 0)
    await sql.query("DELETE FROM video_notifier_state WHERE scope_key = $1 AND rule_id = ANY($2::text[])", [
      key,
      [...write.remove],
    ]);
  for (const rule of write.notifier?.rules ?? [])
    await sql.query(
      `INSERT INTO video_notifier_state (tenant, scope_key, stream, rule_id, holding, last_sent_ms, event, sent_in_event)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (scope_key, stream, rule_id) DO UPDATE SET holding = EXCLUDED.holding,
         last_sent_ms = EXCLUDED.last_sent_ms, event = EXCLUDED.event, sent_in_event = EXCLUDED.sent_in_event`,
      [tenant, key, write.notifier?.stream, rule.ruleId, rule.holding, rule.lastSentMs, rule.event, rule.sentInEvent],
    );
  for (const audit of write.audits) await writeAudit(context, sql, audit.action, audit.subject, audit.details);
}

export async function readNotifierStreams(context: ScopeContext, sql: Sql): Promise<string[]> {
  const rows = await sql.query<{ stream: string }>(
    "SELECT DISTINCT stream FROM video_notifier_state WHERE scope_key = $1 ORDER BY stream",
    [context.key],
  );
  return rows.map((row) => row.stream);
}

export async function readNotifierState(context: ScopeContext, sql: Sql, stream: string): Promise<NotifierRuleState[]> {
  const rows = await sql.query<{
    rule_id: string;
    holding: boolean;
    last_sent_ms: string | null;
    event: number;
    sent_in_event: number;
  }>(
    `SELECT rule_id, holding, last_sent_ms, event, sent_in_event FROM video_notifier_state
     WHERE scope_key = $1 AND stream = $2 ORDER BY rule_id`,
    [context.key, stream],
  );
  return rows.map((row) => ({
    ruleId: row.rule_id,
    holding: row.holding,
    lastSentMs: row.last_sent_ms === null ? null : Number(row.last_sent_ms),
    event: Number(row.event),
    sentInEvent: Number(row.sent_in_event),
  }));
}

export async function readVideoItems(context: ScopeContext, sql: Sql, query: VideoItemQuery): Promise<VideoItem[]> {
  const where = ["i.scope_key = $1"];
  const params: unknown[] = [context.key];
  const add = (clause: (placeholder: string) => string, value: unknown) => {
    params.push(value);
    where.push(clause(`$${params.length}`));
  };
  // One kind as an equality: the (scope, kind, start) index then gives the order, and a limit stops the scan.
  if (query.kinds?.length === 1) add((p) => `i.kind = ${p}`, query.kinds[0]);
  else if (query.kinds) add((p) => `i.kind = ANY(${p}::text[])`, [...query.kinds]);
  if (query.ids) add((p) => `i.id = ANY(${p}::text[])`, [...query.ids]);
  if (query.entityIds) add((p) => `i.entity_id = ANY(${p}::text[])`, [...query.entityIds]);
  if (query.stream !== undefined) add((p) => `i.stream = ${p}`, query.stream);
  if (query.startsAt) add((p) => `i.start_ms = ANY(${p}::bigint[])`, [...query.startsAt]);
  const order = query.newestFirst ? "i.start_ms DESC, i.id DESC" : "i.start_ms, i.id";
  params.push(query.limit ?? null, query.offset ?? 0);
  const rows = await sql.query<ItemRow>(
    `SELECT i.id, i.kind, i.stream, i.entity_id, i.start_ms, i.end_ms, i.text, i.data, i.vector,
            COALESCE((SELECT array_agg(s.raw_node_id ORDER BY s.raw_node_id) FROM video_sources s
                      WHERE s.scope_key = i.scope_key AND s.item_id = i.id), '{}') AS sources
     FROM video_items i WHERE ${where.join(" AND ")}
     ORDER BY ${order} LIMIT $${params.length - 1} OFFSET $${params.length}`,
    params,
  );
  return rows.map(toItem);
}

/**
 * Inside a forget's transaction: removes every item derived from a forgotten raw node (semantic facts
 * and notifications included), then every unnamed entity left with no slot and no observation, with
 * whatever else names it. Returns how many items went.
 */
export async function forgetVideoItems(
  context: ScopeContext,
  sql: Sql,
  rawNodeIds: readonly string[],
  all: boolean,
): Promise<number> {
  const { key } = context;
  if (all) {
    await sql.query("DELETE FROM video_notifier_state WHERE scope_key = $1", [key]);
    return (await sql.query("DELETE FROM video_items WHERE scope_key = $1 RETURNING id", [key])).length;
  }
  const removed = await sql.query(
    `DELETE FROM video_items WHERE scope_key = $1 AND id IN
       (SELECT item_id FROM video_sources WHERE scope_key = $1 AND raw_node_id = ANY($2::text[])) RETURNING id`,
    [key, [...rawNodeIds]],
  );
  if (removed.length === 0) return 0;
  // Only evidence keeps an entity: its consolidation counter and facts go with it.
  const orphans = await sql.query<{ id: string }>(
    `DELETE FROM video_items e WHERE e.scope_key = $1 AND e.kind = 'entity' AND e.text = ''
     AND NOT EXISTS (SELECT 1 FROM video_items o WHERE o.scope_key = e.scope_key AND o.entity_id = e.id
                     AND o.kind IN ('slot', 'observation')) RETURNING id`,
    [key],
  );
  const belongings =
    orphans.length === 0
      ? []
      : await sql.query("DELETE FROM video_items WHERE scope_key = $1 AND entity_id = ANY($2::text[]) RETURNING id", [
          key,
          orphans.map((row) => row.id),
        ]);
  return removed.length + orphans.length + belongings.length;
}

function toItem(row: ItemRow): VideoItem {
  return {
    id: row.id,
    kind: row.kind,
    stream: row.stream,
    entityId: row.entity_id,
    startMs: Number(row.start_ms),
    endMs: Number(row.end_ms),
    text: row.text,
    data: JSON.parse(row.data) as Record<string, unknown>,
    vector: row.vector ? vectorFromBytes(new Uint8Array(row.vector)) : null,
    sources: row.sources,
  };
}
