import { NotFoundError } from "../../core/errors.ts";
import type { ScopedStore } from "../../store/store.ts";
import type { VideoItem } from "../../store/video-records.ts";
import { type EntitySummary, listEntities } from "../video-entities.ts";
import { type FactCategory, type FactEditRecord, factData } from "./facts.ts";

export interface EntityFact {
  readonly id: string;
  readonly text: string;
  readonly category: FactCategory;
  readonly importance: number;
  readonly confirmations: number;
  readonly origin: "user" | "consolidator";
  readonly firstSeen: string;
  readonly lastSeen: string;
  /** The observations that justified it and the raw nodes (key frames, crops) behind them. */
  readonly observations: readonly string[];
  readonly sources: readonly string[];
  readonly history: readonly FactEditRecord[];
}

/** One entity's panel: who it is, its evolving facts (most important first), sightings and recent activity. */
export interface EntityMemory {
  readonly entity: EntitySummary;
  readonly facts: readonly EntityFact[];
  readonly recent: readonly VideoItem[];
  /** Observations until the next consolidation of its facts. */
  readonly nextConsolidationIn: number;
}

export function toEntityFact(item: VideoItem): EntityFact {
  const data = factData(item);
  return {
    id: item.id,
    text: item.text,
    category: data.category,
    importance: Math.round(data.importance * 1000) / 1000,
    confirmations: data.confirmations,
    origin: data.origin,
    firstSeen: new Date(item.startMs).toISOString(),
    lastSeen: new Date(item.endMs).toISOString(),
    observations: data.observations,
    sources: item.sources,
    history: data.history,
  };
}

/** A fact of the scope: an entity's (`entityId`), or what holds about a source's scene (`source`, no entity). */
export interface ScopeFact extends EntityFact {
  readonly entityId: string | null;
  readonly source: string | null;
}

/** Facts of the scope (or of one entity, or one source's scene facts), most important first. */
export async function listFacts(
  scoped: ScopedStore,
  options: { readonly entityId?: string; readonly source?: string } = {},
): Promise<ScopeFact[]> {
  const items = await scoped.readVideoItems({
    kinds: ["fact"],
    ...(options.entityId ? { entityIds: [options.entityId] } : {}),
    ...(options.source ? { stream: options.source } : {}),
  });
  return items
    .filter((item) => !options.source || item.entityId === null)
    .map((item) => ({
      entityId: item.entityId,
      source: item.entityId === null ? item.stream : null,
      ...toEntityFact(item),
    }))
    .sort((a, b) => b.importance - a.importance || a.id.localeCompare(b.id));
}

export async function entityMemory(
  scoped: ScopedStore,
  entityId: string,
  options: { readonly every: number; readonly recent?: number },
): Promise<EntityMemory> {
  const entity = (await listEntities(scoped, { includeMerged: true })).find((found) => found.id === entityId);
  if (!entity) throw new NotFoundError("entity", entityId);
  const owned = await scoped.readVideoItems({ entityIds: [entityId], kinds: ["fact", "observation", "consolidation"] });
  const counter = owned.find((item) => item.kind === "consolidation");
  return {
    entity,
    facts: owned
      .filter((item) => item.kind === "fact")
      .map(toEntityFact)
      .sort((a, b) => b.importance - a.importance || a.id.localeCompare(b.id)),
    recent: owned
      .filter((item) => item.kind === "observation")
      .slice(-(options.recent ?? 5))
      .reverse()
      .map((item) => ({ ...item, vector: null })),
    nextConsolidationIn: options.every - Number(counter?.data.count ?? 0),
  };
}
