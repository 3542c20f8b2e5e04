import { InputError, NotFoundError } from "../core/errors.ts";
import { contentWords } from "../core/text.ts";
import { cosine } from "../core/vectors.ts";
import { embedTexts } from "../models/model-calls.ts";
import type { Models } from "../models/provider.ts";
import type { ScopedStore } from "../store/store.ts";
import type { VideoItem, VideoItemKind } from "../store/video-records.ts";
import { sourceOf } from "./video-text.ts";

/**
 * The levels a query can search (ReflectWorld-MM §3.3, §3.6): the three episodic ones, semantic
 * facts about entities, procedural rules, and the notification log.
 */
export type EpisodicLevel = "observation" | "trace" | "chapter" | "fact" | "rule" | "notification";
export const episodicLevels: readonly EpisodicLevel[] = [
  "observation",
  "trace",
  "chapter",
  "fact",
  "rule",
  "notification",
];

export interface VideoHit {
  readonly item: VideoItem;
  readonly score: number;
}

/**
 * Similarity search over one level: cosine of the query's text vector to each item's, plus the
 * share of the query's content words the item's text contains (the offline text model is weak on
 * short texts; names and object labels carry the query); a fact's score is weighted by its
 * importance (0.5 + 0.5·w).
 */
export async function searchLevel(
  scoped: ScopedStore,
  models: Models,
  query: string,
  options: {
    readonly level: EpisodicLevel;
    readonly limit?: number;
    readonly stream?: string;
    readonly entityId?: string;
  },
): Promise<VideoHit[]> {
  if (!episodicLevels.includes(options.level))
    throw new InputError("level", `must be one of ${episodicLevels.join(", ")}`);
  if (!query.trim()) throw new InputError("query", "must not be empty");
  const [vector] = await embedTexts(models.text, [query]);
  const items = await scoped.readVideoItems({
    kinds: [options.level],
    ...(options.stream ? { stream: options.stream } : {}),
    ...(options.entityId ? { entityIds: [options.entityId] } : {}),
  });
  const words = contentWords(query);
  return items
    .map((item) => {
      const text = item.text.toLowerCase();
      const lexical = words.length ? words.filter((word) => text.includes(word)).length / words.length : 0;
      const dense = vector && item.vector ? cosine(vector, item.vector) : 0;
      // A fact's importance takes part in ranking: well-confirmed facts first among similar ones.
      const weight = item.kind === "fact" ? 0.5 + 0.5 * Number(item.data.importance ?? 0) : 1;
      return { item: withoutVector(item), score: Math.round((dense + lexical) * weight * 1000) / 1000 };
    })
    .sort((a, b) => b.score - a.score || a.item.startMs - b.item.startMs)
    .slice(0, options.limit ?? 10);
}

/** An item with its time-ordered neighbours at the same level of the same stream. */
export async function getWithNeighbours(
  scoped: ScopedStore,
  id: string,
  window = 2,
): Promise<{ item: VideoItem; before: VideoItem[]; after: VideoItem[] }> {
  const [item] = await scoped.readVideoItems({ ids: [id] });
  if (!item) throw new NotFoundError("video item", id);
  const level = await scoped.readVideoItems({
    kinds: [item.kind as VideoItemKind],
    ...(item.stream ? { stream: item.stream } : {}),
    ...(item.kind === "observation" && item.entityId ? { entityIds: [item.entityId] } : {}),
  });
  const index = level.findIndex((candidate) => candidate.id === id);
  return {
    item: withoutVector(item),
    before: level.slice(Math.max(0, index - window), index).map(withoutVector),
    after: level.slice(index + 1, index + 1 + window).map(withoutVector),
  };
}

export interface KeyFrame {
  readonly rawNodeId: string;
  readonly time: string;
  readonly hash: string;
  readonly mediaType: string;
  readonly caption: string | null;
}

/** The stored images behind an item (its key frames and crops): fetch their pixels with `Memory.getBlob`. */
export async function keyFramesOf(scoped: ScopedStore, id: string): Promise<KeyFrame[]> {
  const [item] = await scoped.readVideoItems({ ids: [id] });
  if (!item) throw new NotFoundError("video item", id);
  const nodes = await scoped.readRawNodes({ ids: [...item.sources] });
  return nodes.flatMap((node) =>
    node.images.flatMap((image) =>
      image.hash
        ? [
            {
              rawNodeId: node.id,
              time: node.time,
              hash: image.hash,
              mediaType: image.mediaType ?? "image/jpeg",
              caption: image.caption,
            },
          ]
        : [],
    ),
  );
}

/** The per-segment moments (traces) newest first, each with the key frames and crops behind it. */
export async function listMoments(
  scoped: ScopedStore,
  options: { readonly stream?: string; readonly limit?: number } = {},
): Promise<{ item: VideoItem; frames: KeyFrame[] }[]> {
  const limit = options.limit ?? 20;
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new InputError("limit", "1 to 500");
  const traces = await scoped.readVideoItems({
    kinds: ["trace"],
    ...(options.stream ? { stream: options.stream } : {}),
  });
  const newest = traces.reverse().slice(0, limit);
  return Promise.all(
    newest.map(async (item) => ({ item: withoutVector(item), frames: await keyFramesOf(scoped, item.id) })),
  );
}

/** A watched source (a camera, a file) in the source view: its streams, segments and whether it is live. */
export interface VideoSourceSummary {
  readonly source: string;
  /** A watch of it is running in this process now. */
  readonly live: boolean;
  /** Its streams (one per watch), oldest first; `segments` counts the analysed ones (traces). */
  readonly streams: readonly {
    readonly stream: string;
    readonly live: boolean;
    readonly from: string;
    readonly to: string;
    readonly segments: number;
  }[];
  readonly segments: number;
}

/**
 * The sources of the scope, most recently seen first: every stream that wrote a segment, grouped by
 * source, plus running watches (`live`: stream name → start time) that have not written one yet.
 */
export async function listSources(
  scoped: ScopedStore,
  live: ReadonlyMap<string, number>,
): Promise<VideoSourceSummary[]> {
  const streams = new Map<string, { from: number; to: number; segments: number }>();
  for (const trace of await scoped.readVideoItems({ kinds: ["trace"] })) {
    if (!trace.stream) continue;
    const entry = streams.get(trace.stream) ?? { from: trace.startMs, to: trace.endMs, segments: 0 };
    streams.set(trace.stream, {
      from: Math.min(entry.from, trace.startMs),
      to: Math.max(entry.to, trace.endMs),
      segments: entry.segments + 1,
    });
  }
  for (const [stream, startedMs] of live)
    if (!streams.has(stream)) streams.set(stream, { from: startedMs, to: startedMs, segments: 0 });
  const bySource = new Map<string, VideoSourceSummary["streams"][number][]>();
  for (const [stream, entry] of [...streams].sort((a, b) => a[1].from - b[1].from)) {
    const source = sourceOf(stream);
    bySource.set(source, [
      ...(bySource.get(source) ?? []),
      {
        stream,
        live: live.has(stream),
        from: new Date(entry.from).toISOString(),
        to: new Date(entry.to).toISOString(),
        segments: entry.segments,
      },
    ]);
  }
  return [...bySource]
    .map(([source, list]) => ({
      source,
      live: list.some((entry) => entry.live),
      streams: list,
      segments: list.reduce((sum, entry) => sum + entry.segments, 0),
    }))
    .sort((a, b) => (b.streams.at(-1)?.to ?? "").localeCompare(a.streams.at(-1)?.to ?? ""));
}

/** Vectors are internal: callers get the text, time, links and sources. */
function withoutVector(item: VideoItem): VideoItem {
  return { ...item, vector: null };
}
