import { embedTexts } from "../../models/model-calls.ts";
import type { Models } from "../../models/provider.ts";
import type { ScopedStore } from "../../store/store.ts";
import type { VideoItem, VideoWrite } from "../../store/video-records.ts";
import { sourceOf } from "../video-text.ts";
import { chatConsolidator } from "./chat-consolidator.ts";
import { type Consolidator, editsFromPatterns, modelFreeConsolidator } from "./consolidator.ts";
import { applyFactEdits, factData, identityFact, type SemanticConfig } from "./facts.ts";
import { scenePatterns } from "./scene.ts";

export interface ConsolidateContext {
  readonly scoped: ScopedStore;
  readonly models: Models;
  readonly config: SemanticConfig;
  readonly newId: (prefix: string) => string;
  readonly now: () => number;
}

export interface ConsolidationReport {
  readonly write: VideoWrite;
  /** Entities whose facts were consolidated in this call. */
  readonly consolidated: readonly string[];
  readonly warnings: readonly string[];
}

/** The persistent per-entity counter's id: one per entity, in the entity's scope (per user). */
export const counterId = (entityId: string) => `vcons_${entityId}`;

/**
 * After a segment's observations are committed: counts one new observation per entity and, every
 * `every` of them, consolidates that entity's facts from its earlier observations (the segment's
 * own are excluded as self-evidence; an entity with no earlier observation is skipped). A named
 * entity gets its identity fact here too. Returns one write for the caller to commit.
 */
export async function consolidateEntities(
  context: ConsolidateContext,
  segment: { readonly entityIds: readonly string[]; readonly observationIds: readonly string[] },
): Promise<ConsolidationReport> {
  const { scoped, config } = context;
  const put: VideoItem[] = [];
  const remove: string[] = [];
  const audits: VideoWrite["audits"][number][] = [];
  const warnings: string[] = [];
  const consolidated: string[] = [];
  if (segment.entityIds.length === 0) return { write: { put, remove, audits }, consolidated, warnings };
  const current = new Set(segment.observationIds);
  const nowMs = context.now();
  const items = await scoped.readVideoItems({ ids: [...segment.entityIds, ...segment.entityIds.map(counterId)] });
  const entities = new Map(items.filter((item) => item.kind === "entity").map((item) => [item.id, item]));
  const counters = new Map(items.filter((item) => item.kind === "consolidation").map((item) => [item.entityId, item]));

  for (const entityId of segment.entityIds) {
    const entity = entities.get(entityId);
    if (!entity) continue;
    const facts = await scoped.readVideoItems({ kinds: ["fact"], entityIds: [entityId] });
    if (
      entity.text &&
      !facts.some((fact) => factData(fact).category === "identity" && fact.text.endsWith(entity.text))
    ) {
      const fact = identityFact(entity, context.newId("vfact"), nowMs);
      put.push(fact);
      facts.push(fact);
      audits.push({
        action: "video.fact.add",
        subject: fact.id,
        details: { entity: entityId, category: "identity", text: fact.text, importance: 1, by: "user" },
      });
    }
    const counter = counters.get(entityId);
    const count = Number(counter?.data.count ?? 0) + 1;
    const runs = Number(counter?.data.consolidations ?? 0);
    if (count < config.every) {
      put.push(counterItem(counterId(entityId), count, runs, counter, nowMs, entityId));
      continue;
    }
    const observations = await latestObservations(scoped, entityId, current, config.historyObservations);
    put.push(counterItem(counterId(entityId), 0, observations.length ? runs + 1 : runs, counter, nowMs, entityId));
    if (observations.length === 0) {
      audits.push({
        action: "video.consolidation",
        subject: entityId,
        details: { skipped: "the entity has no earlier observation", observationsCounted: count },
      });
      continue;
    }
    const consolidator = pickConsolidator(context, warnings);
    const { companions, texts } = await segmentContext(scoped, observations);
    let outcome: Awaited<ReturnType<Consolidator["consolidate"]>>;
    try {
      outcome = await consolidator.consolidate({ entity, facts, observations, companions, texts });
    } catch (error) {
      warnings.push(
        `consolidation of ${entityId} by ${consolidator.id} failed, facts unchanged: ${error instanceof Error ? error.message : String(error)}`,
      );
      continue;
    }
    warnings.push(...outcome.warnings);
    const applied = applyFactEdits(facts, outcome.edits, {
      entityId,
      nowMs,
      by: consolidator.id,
      config,
      observations: new Map(observations.map((item) => [item.id, item])),
      newId: () => context.newId("vfact"),
    });
    const stale = applied.put.filter((fact) => fact.vector === null);
    const vectors = await embedTexts(
      context.models.text,
      stale.map((fact) => fact.text),
    );
    const embedded = new Map(stale.map((fact, index) => [fact.id, vectors[index] ?? null]));
    put.push(
      ...applied.put.map((fact) => (embedded.has(fact.id) ? { ...fact, vector: embedded.get(fact.id) ?? null } : fact)),
    );
    remove.push(...applied.remove);
    audits.push(...applied.audits, {
      action: "video.consolidation",
      subject: entityId,
      details: {
        by: consolidator.id,
        observationsRead: observations.map((item) => item.id),
        ...applied.counts,
        dropped: applied.dropped.map(({ edit, reason }) => ({ edit, reason })),
      },
    });
    for (const { reason } of applied.dropped)
      if (consolidator.id !== "model-free") warnings.push(`edit dropped: ${reason}`);
    consolidated.push(entityId);
  }
  return { write: { put, remove, audits }, consolidated, warnings };
}

/** The persistent counter of a source's segments (its scene memory's observations). */
export const sourceCounterId = (source: string) => `vcons_source_${source}`;

/**
 * After a segment's trace is committed: counts one new observation of the stream's source and, every
 * `every` of them, consolidates the source's scene facts from its earlier traces (the segment's own
 * excluded as self-evidence; skipped when there is none). Scene facts are `fact` items with no entity
 * and the source as their stream; the model-free rules of `scenePatterns` find them.
 */
export async function consolidateSource(
  context: ConsolidateContext,
  segment: { readonly stream: string; readonly traceId: string },
): Promise<ConsolidationReport> {
  const { scoped, config } = context;
  const source = sourceOf(segment.stream);
  const nowMs = context.now();
  const [counter] = await scoped.readVideoItems({ ids: [sourceCounterId(source)] });
  const count = Number(counter?.data.count ?? 0) + 1;
  const runs = Number(counter?.data.consolidations ?? 0);
  const write = (put: VideoItem[], remove: string[] = [], audits: VideoWrite["audits"][number][] = []) => ({
    write: { put, remove, audits },
    consolidated: audits.some((entry) => entry.action === "video.consolidation" && !("skipped" in entry.details))
      ? [source]
      : [],
    warnings: [],
  });
  const counted = (value: number, consolidations: number): VideoItem => ({
    ...counterItem(sourceCounterId(source), value, consolidations, counter, nowMs),
    entityId: null,
    stream: source,
    data: { count: value, consolidations, source },
  });
  if (count < config.every) return write([counted(count, runs)]);
  // Every stream of the source: a restarted watch adds to the same place's memory.
  const traces = await latestTraces(scoped, source, segment.traceId, config.historyObservations);
  if (traces.length === 0)
    return write(
      [counted(0, runs)],
      [],
      [
        {
          action: "video.consolidation",
          subject: source,
          details: { source, skipped: "the source has no earlier segment", observationsCounted: count },
        },
      ],
    );
  const facts = (await scoped.readVideoItems({ kinds: ["fact"], stream: source })).filter(
    (fact) => fact.entityId === null,
  );
  const edits = editsFromPatterns(scenePatterns(traces, config), facts, traces, config);
  const applied = applyFactEdits(facts, edits, {
    entityId: null,
    stream: source,
    nowMs,
    by: "model-free",
    config,
    observations: new Map(traces.map((item) => [item.id, item])),
    newId: () => context.newId("vfact"),
  });
  const stale = applied.put.filter((fact) => fact.vector === null);
  const vectors = await embedTexts(
    context.models.text,
    stale.map((fact) => `${source}: ${fact.text}`),
  );
  const embedded = new Map(stale.map((fact, index) => [fact.id, vectors[index] ?? null]));
  return write(
    [
      counted(0, runs + 1),
      ...applied.put.map((fact) => (embedded.has(fact.id) ? { ...fact, vector: embedded.get(fact.id) ?? null } : fact)),
    ],
    applied.remove,
    [
      ...applied.audits.map((entry) => ({ ...entry, details: { ...entry.details, source } })),
      {
        action: "video.consolidation",
        subject: source,
        details: {
          source,
          by: "model-free",
          observationsRead: traces.map((item) => item.id),
          ...applied.counts,
          dropped: applied.dropped.map(({ edit, reason }) => ({ edit, reason })),
        },
      },
    ],
  );
}

function pickConsolidator(context: ConsolidateContext, warnings: string[]): Consolidator {
  if (context.config.consolidator === "chat") {
    if (context.models.chat) return chatConsolidator(context.models.chat);
    warnings.push("semantic.consolidator is chat but the profile has no chat model: the model-free one ran");
  }
  return modelFreeConsolidator(context.config);
}

function counterItem(
  id: string,
  count: number,
  consolidations: number,
  previous: VideoItem | undefined,
  nowMs: number,
  entityId: string | null = null,
): VideoItem {
  return {
    id,
    kind: "consolidation",
    stream: null,
    entityId,
    startMs: previous?.startMs ?? nowMs,
    endMs: nowMs,
    text: "",
    data: { count, consolidations },
    vector: null,
    sources: [],
  };
}

/**
 * The entity's latest `count` observations other than the segment's own, oldest first: read newest
 * first with a limit, so the cost does not grow with how long the entity has been watched.
 */
export async function latestObservations(
  scoped: ScopedStore,
  entityId: string,
  exclude: ReadonlySet<string>,
  count: number,
): Promise<VideoItem[]> {
  if (count <= 0) return [];
  const newest = await scoped.readVideoItems({
    kinds: ["observation"],
    entityIds: [entityId],
    newestFirst: true,
    limit: count + exclude.size,
  });
  return newest
    .filter((item) => !exclude.has(item.id))
    .slice(0, count)
    .reverse();
}

/**
 * The latest `count` traces of a source's streams other than `excludeId`, oldest first. Streams of
 * other sources may be interleaved, so traces are read newest first a page at a time until enough are
 * found: a page when the scope watches one place.
 */
export async function latestTraces(
  scoped: ScopedStore,
  source: string,
  excludeId: string,
  count: number,
): Promise<VideoItem[]> {
  const found: VideoItem[] = [];
  if (count <= 0) return found;
  const page = count + 1;
  for (let offset = 0; found.length < count; offset += page) {
    const traces = await scoped.readVideoItems({ kinds: ["trace"], newestFirst: true, limit: page, offset });
    for (const item of traces)
      if (found.length < count && item.stream !== null && sourceOf(item.stream) === source && item.id !== excludeId)
        found.push(item);
    if (traces.length < page) break;
  }
  return found.reverse();
}

/**
 * Who else was in each observation's segment, and what text was read there (from its trace). The
 * items of a segment share its start time, so only those segments are read, not the whole stream.
 */
async function segmentContext(
  scoped: ScopedStore,
  observations: readonly VideoItem[],
): Promise<{ companions: Map<string, { id: string; label: string }[]>; texts: Map<string, string> }> {
  const companions = new Map<string, { id: string; label: string }[]>();
  const texts = new Map<string, string>();
  const streams = [...new Set(observations.map((item) => item.stream).filter((s): s is string => !!s))];
  const labels = new Map<string, string>();
  for (const stream of streams) {
    const startsAt = [...new Set(observations.filter((item) => item.stream === stream).map((item) => item.startMs))];
    const inStream = await scoped.readVideoItems({ kinds: ["observation", "trace"], stream, startsAt });
    const others = inStream.filter((item) => item.kind === "observation" && item.entityId);
    const entityIds = [...new Set(others.map((item) => item.entityId as string))].filter((id) => !labels.has(id));
    for (const entity of await scoped.readVideoItems({ ids: entityIds }))
      labels.set(entity.id, entity.text || `entity ${entity.id}`);
    for (const item of observations.filter((found) => found.stream === stream)) {
      const segment = item.data.segment;
      companions.set(
        item.id,
        [
          ...new Set(
            others
              .filter((other) => other.data.segment === segment && other.entityId !== item.entityId)
              .map((other) => other.entityId as string),
          ),
        ].map((id) => ({ id, label: labels.get(id) ?? `entity ${id}` })),
      );
      const trace = inStream.find((found) => found.kind === "trace" && found.data.segment === segment);
      const read = trace?.text.match(/; text read: (.*)\.$/)?.[1];
      if (read) texts.set(item.id, read);
    }
  }
  return { companions, texts };
}
