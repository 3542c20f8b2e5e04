import { randomUUID } from "node:crypto";
import { InputError, NotFoundError } from "../core/errors.ts";
import { cosine } from "../core/vectors.ts";
import type { ScopedStore } from "../store/store.ts";
import type { VideoItem } from "../store/video-records.ts";
import type { GalleryEntity } from "./reid.ts";
import { factData, identityFact } from "./semantic/facts.ts";
import type { TrackEvidence } from "./tracks.ts";
import type { IdentityConfig } from "./video-config.ts";

/** The entities of a scope and their gallery slots, as the resolver reads them; kept current by the pipeline. */
export class Galleries {
  readonly #entities = new Map<string, VideoItem>();
  readonly #slots = new Map<string, VideoItem[]>();

  static async load(scoped: ScopedStore): Promise<Galleries> {
    const galleries = new Galleries();
    galleries.commit(await scoped.readVideoItems({ kinds: ["entity", "slot"] }));
    return galleries;
  }

  /** Active (not merged) entities with their face and appearance slots. */
  list(): GalleryEntity[] {
    return [...this.#entities.values()]
      .filter((entity) => entity.data.status !== "merged")
      .map((entity) => {
        const slots = this.#slots.get(entity.id) ?? [];
        const of = (modality: string) =>
          slots
            .filter((slot) => slot.data.modality === modality && slot.vector)
            .map((slot) => slot.vector as Float32Array);
        return { id: entity.id, name: entity.text, face: of("face"), appearance: of("appearance") };
      });
  }

  label(id: string): string {
    const name = this.#entities.get(id)?.text;
    return name ? `${name} (${id})` : `person ${id}`;
  }

  /** Applies items that were (or are about to be) written: entities and slots; anything else is ignored. */
  commit(items: readonly VideoItem[]): void {
    for (const item of items) {
      if (item.kind === "entity") this.#entities.set(item.id, item);
      if (item.kind === "slot" && item.entityId) {
        const slots = (this.#slots.get(item.entityId) ?? []).filter((slot) => slot.id !== item.id);
        this.#slots.set(item.entityId, [...slots, item]);
      }
    }
  }

  newEntity(id: string, firstSeenMs: number, reason: string): VideoItem {
    const item: VideoItem = {
      id,
      kind: "entity",
      stream: null,
      entityId: null,
      startMs: firstSeenMs,
      endMs: firstSeenMs,
      text: "",
      data: { kind: "person", status: "active", created: reason },
      vector: null,
      sources: [],
    };
    this.commit([item]);
    return item;
  }

  /**
   * Gallery slots a resolved track adds: its best safe face and its mean safe appearance, each only
   * if it differs from the entity's slots of that modality and the gallery has room. Tracks without
   * safe evidence add nothing (they have no vectors).
   */
  extend(
    entityId: string,
    track: TrackEvidence,
    source: string,
    stream: string,
    span: { startMs: number; endMs: number },
    config: IdentityConfig,
    newId: (prefix: string) => string,
  ): VideoItem[] {
    const added: VideoItem[] = [];
    const existing = this.#slots.get(entityId) ?? [];
    for (const [modality, vector] of [
      ["face", track.faces[0] ?? null],
      ["appearance", track.appearance],
    ] as const) {
      if (!vector) continue;
      const slots = existing.filter((slot) => slot.data.modality === modality && slot.vector);
      if (slots.length >= config.slotsPerModality) continue;
      const nearest = Math.max(-1, ...slots.map((slot) => cosine(slot.vector as Float32Array, vector)));
      if (nearest >= config.slotNovelty) continue;
      added.push({
        id: newId("vslot"),
        kind: "slot",
        stream,
        entityId,
        ...span,
        text: "",
        data: { modality, enrolled: false, track: track.trackId },
        vector,
        sources: [source],
      });
    }
    this.commit(added);
    return added;
  }

  /** Items that move `from`'s slots and observations to `into`, and mark `from` merged. */
  async mergeItems(scoped: ScopedStore, from: string, into: string, reason: string): Promise<VideoItem[]> {
    const owned = await scoped.readVideoItems({ entityIds: [from] });
    const moved = owned.map((item) => ({ ...item, entityId: into }));
    const entity = this.#entities.get(from) ?? (await scoped.readVideoItems({ ids: [from] }))[0];
    const items: VideoItem[] = [...moved];
    if (entity) items.push({ ...entity, data: { ...entity.data, status: "merged", mergedInto: into, merged: reason } });
    // Pending copies of the moved slots in memory follow them.
    this.#slots.set(into, [
      ...(this.#slots.get(into) ?? []),
      ...(this.#slots.get(from) ?? []).map((slot) => ({ ...slot, entityId: into })),
    ]);
    this.#slots.delete(from);
    this.commit(items.filter((item) => item.kind === "entity"));
    return items;
  }
}

/** An entity with its sightings: what `cairn entities list` and `Memory.listEntities` show. */
export interface EntitySummary {
  readonly id: string;
  readonly name: string | null;
  readonly status: string;
  readonly mergedInto: string | null;
  readonly slots: { readonly face: number; readonly appearance: number; readonly enrolled: number };
  readonly observations: number;
  readonly sightings: readonly {
    readonly stream: string;
    readonly from: string;
    readonly to: string;
    readonly observations: number;
    readonly keyFrames: readonly string[];
  }[];
}

/** Entities of the scope with their sightings, per stream, in time order. Merged entities only with `includeMerged`. */
export async function listEntities(
  scoped: ScopedStore,
  options: { readonly includeMerged?: boolean } = {},
): Promise<EntitySummary[]> {
  const items = await scoped.readVideoItems({ kinds: ["entity", "slot", "observation"] });
  const byEntity = new Map<string, VideoItem[]>();
  for (const item of items) {
    if (item.entityId) byEntity.set(item.entityId, [...(byEntity.get(item.entityId) ?? []), item]);
  }
  return items
    .filter((item) => item.kind === "entity")
    .filter((entity) => options.includeMerged || entity.data.status !== "merged")
    .map((entity): EntitySummary => {
      const owned = byEntity.get(entity.id) ?? [];
      const slots = owned.filter((item) => item.kind === "slot");
      const observations = owned.filter((item) => item.kind === "observation");
      const streams = new Map<string, VideoItem[]>();
      for (const observation of observations) {
        const stream = observation.stream ?? "";
        streams.set(stream, [...(streams.get(stream) ?? []), observation]);
      }
      return {
        id: entity.id,
        name: entity.text || null,
        status: String(entity.data.status ?? "active"),
        mergedInto: typeof entity.data.mergedInto === "string" ? entity.data.mergedInto : null,
        slots: {
          face: slots.filter((slot) => slot.data.modality === "face").length,
          appearance: slots.filter((slot) => slot.data.modality === "appearance").length,
          enrolled: slots.filter((slot) => slot.data.enrolled === true).length,
        },
        observations: observations.length,
        sightings: [...streams].map(([stream, seen]) => ({
          stream,
          from: new Date(Math.min(...seen.map((item) => item.startMs))).toISOString(),
          to: new Date(Math.max(...seen.map((item) => item.endMs))).toISOString(),
          observations: seen.length,
          keyFrames: [...new Set(seen.flatMap((item) => stringList(item.data.keyFrames)))].slice(0, 8),
        })),
      };
    });
}

async function readEntity(scoped: ScopedStore, id: string): Promise<VideoItem> {
  const [entity] = await scoped.readVideoItems({ ids: [id], kinds: ["entity"] });
  if (!entity) throw new NotFoundError("entity", id);
  return entity;
}

/** A user names an entity: an audited decision. An empty name clears it. */
export async function nameEntity(scoped: ScopedStore, id: string, name: string): Promise<VideoItem> {
  const trimmed = name.trim();
  if (trimmed.length > 200) throw new InputError("name", "must be at most 200 characters");
  const entity = await readEntity(scoped, id);
  if (entity.data.status === "merged")
    throw new InputError("entity", `${id} was merged into ${String(entity.data.mergedInto)}`);
  const named = { ...entity, text: trimmed };
  // The identity fact follows the user's decision (a consolidator never changes it).
  const identity = (await scoped.readVideoItems({ kinds: ["fact"], entityIds: [id] })).filter(
    (fact) => factData(fact).category === "identity",
  );
  const fact = trimmed ? identityFact(named, newFactId(), Date.now()) : null;
  await scoped.commitVideo({
    put: [named, ...(fact ? [fact] : [])],
    remove: identity.map((item) => item.id),
    audits: [
      {
        action: "video.entity.name",
        subject: id,
        details: { previous: entity.text || null, name: trimmed || null, by: "user" },
      },
      ...identity.map((item) => ({
        action: "video.fact.delete",
        subject: item.id,
        details: { entity: id, text: item.text, reason: "renamed by user", by: "user" },
      })),
      ...(fact
        ? [
            {
              action: "video.fact.add",
              subject: fact.id,
              details: { entity: id, category: "identity", text: fact.text, importance: 1, by: "user" },
            },
          ]
        : []),
    ],
  });
  return named;
}

/** A user merges `from` into `into`: slots and observations move, `from` is kept as merged (audited). */
export async function mergeEntities(scoped: ScopedStore, from: string, into: string): Promise<void> {
  if (from === into) throw new InputError("into", "an entity cannot be merged into itself");
  const [source, target] = [await readEntity(scoped, from), await readEntity(scoped, into)];
  for (const entity of [source, target]) {
    if (entity.data.status === "merged") throw new InputError("entity", `${entity.id} is already merged`);
  }
  const all = await scoped.readVideoItems({ entityIds: [from] });
  // Facts and episodes move; the merged entity's consolidation counter goes (the target keeps its own).
  const owned = all.filter((item) => item.kind !== "consolidation");
  await scoped.commitVideo({
    put: [
      ...owned.map((item) => ({ ...item, entityId: into })),
      {
        ...source,
        data: { ...source.data, status: "merged", mergedInto: into, merged: "by user" },
      },
      ...(target.text || !source.text ? [] : [{ ...target, text: source.text }]),
    ],
    remove: all.filter((item) => item.kind === "consolidation").map((item) => item.id),
    audits: [{ action: "video.entity.merge", subject: from, details: { from, into, moved: owned.length, by: "user" } }],
  });
}

/**
 * A user splits observations off an entity into a new one: those observations, and the gallery slots
 * drawn from the same raw evidence, move to the new entity (audited).
 */
export async function splitEntity(
  scoped: ScopedStore,
  id: string,
  observationIds: readonly string[],
  newId: () => string,
): Promise<string> {
  const entity = await readEntity(scoped, id);
  const owned = await scoped.readVideoItems({ entityIds: [id] });
  const observations = owned.filter((item) => item.kind === "observation" && observationIds.includes(item.id));
  const missing = observationIds.find((observation) => !observations.some((item) => item.id === observation));
  if (missing) throw new InputError("observations", `${missing} is not an observation of ${id}`);
  if (observations.length === 0) throw new InputError("observations", "name at least one observation to split off");
  const sources = new Set(observations.flatMap((item) => item.sources));
  const slots = owned.filter((item) => item.kind === "slot" && item.sources.some((source) => sources.has(source)));
  const created = newId();
  await scoped.commitVideo({
    put: [
      {
        ...entity,
        id: created,
        text: "",
        startMs: Math.min(...observations.map((item) => item.startMs)),
        endMs: Math.max(...observations.map((item) => item.endMs)),
        data: { kind: entity.data.kind ?? "person", status: "active", created: `split from ${id} by user` },
      },
      ...[...observations, ...slots].map((item) => ({ ...item, entityId: created })),
    ],
    remove: [],
    audits: [
      {
        action: "video.entity.split",
        subject: id,
        details: {
          from: id,
          into: created,
          observations: observations.map((item) => item.id),
          slots: slots.length,
          by: "user",
        },
      },
    ],
  });
  return created;
}

function newFactId(): string {
  return `vfact_${randomUUID().replaceAll("-", "").slice(0, 20)}`;
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === "string") : [];
}
