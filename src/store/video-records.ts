import { vectorBytes } from "../core/vectors.ts";

/**
 * Video memory as plain records crossing the Store seam (ReflectWorld-MM): entities, the gallery
 * slots that identify them, and the three episodic levels. Each item names the raw nodes it was
 * derived from (`sources`); a forget of any of them removes the item, and an entity left with no
 * slot and no observation goes too unless a user named it.
 */
export type VideoItemKind =
  | "entity"
  | "slot"
  | "observation"
  | "trace"
  | "chapter"
  /** Semantic memory: a durable fact about an entity, with its importance and edit history. */
  | "fact"
  /** An entity's persistent consolidation counter (observations since its last consolidation). */
  | "consolidation"
  /** Procedural memory: a rule or preference a user stated. */
  | "rule"
  /** The notifier's record: one decision to deliver (or not) with the signal behind it. */
  | "notification";

export const videoItemKinds: readonly VideoItemKind[] = [
  "entity",
  "slot",
  "observation",
  "trace",
  "chapter",
  "fact",
  "consolidation",
  "rule",
  "notification",
];

export interface VideoItem {
  readonly id: string;
  readonly kind: VideoItemKind;
  /** The stream (watch) the item was seen in; null for an entity or an enrolled slot. */
  readonly stream: string | null;
  /** A slot's owner, an observation's entity; null otherwise. */
  readonly entityId: string | null;
  /** Media time span (epoch ms of the stream's clock). */
  readonly startMs: number;
  readonly endMs: number;
  /** An entity's name (empty until named), or the item's summary text. */
  readonly text: string;
  readonly data: Readonly<Record<string, unknown>>;
  /** A slot's face or appearance vector; an episode's text vector; null otherwise. */
  readonly vector: Float32Array | null;
  /** Raw nodes of the scope the item derives from. */
  readonly sources: readonly string[];
}

/** One atomic change of the video memory: items put (insert or replace by id), removed, and audited. */
export interface VideoWrite {
  readonly put: readonly VideoItem[];
  readonly remove: readonly string[];
  readonly audits: readonly {
    readonly action: string;
    readonly subject: string;
    readonly details: Record<string, unknown>;
  }[];
  /**
   * The notifier's record of what a stream recently sent, saved with the decisions that changed it
   * (rows of these rules replaced; a removed rule's rows go with it), so a restarted watch keeps its
   * cooldown and deduplication.
   */
  readonly notifier?: { readonly stream: string; readonly rules: readonly NotifierRuleState[] };
}

/** What the notifier remembers about one rule on one stream: the record of what it recently sent. */
export interface NotifierRuleState {
  readonly ruleId: string;
  /** The condition was decided as holding (sent or suppressed) and has not been cleared since. */
  readonly holding: boolean;
  /** Media time (epoch ms of the stream's clock) of the rule's last delivery; null before any. */
  readonly lastSentMs: number | null;
  readonly event: number;
  readonly sentInEvent: number;
}

/**
 * Which items to read; every field narrows, none means all. Ordered by start time, then id (oldest
 * first, or newest first with `newestFirst`), before `offset` and `limit` apply.
 */
export interface VideoItemQuery {
  readonly kinds?: readonly VideoItemKind[];
  readonly ids?: readonly string[];
  readonly entityIds?: readonly string[];
  readonly stream?: string;
  /** Items whose start time is one of these (epoch ms): the items of given segments of a stream. */
  readonly startsAt?: readonly number[];
  /** Newest first (start time, then id, both descending): the latest `limit` items without reading all. */
  readonly newestFirst?: boolean;
  readonly limit?: number;
  readonly offset?: number;
}

/**
 * An item's columns after its scope, in table order (id, kind, stream, entity_id, start_ms, end_ms,
 * text, data, vector): both backends insert the same row.
 */
export function videoItemColumns(item: VideoItem): unknown[] {
  return [
    item.id,
    item.kind,
    item.stream,
    item.entityId,
    item.startMs,
    item.endMs,
    item.text,
    JSON.stringify(item.data),
    item.vector ? Buffer.from(vectorBytes(item.vector)) : null,
  ];
}
