import type { VideoItem, VideoWrite } from "../../store/video-records.ts";

/**
 * Entity-centric semantic memory (ReflectWorld-MM §3.4): durable facts about an entity, each with
 * an importance w ∈ [0, 1] that grows on re-confirmation (Eq. 1) and an audited edit history. Pure:
 * edits in, items and audits out; the caller commits them.
 */
export type FactCategory = "identity" | "attribute" | "habit" | "relation";
export const factCategories: readonly FactCategory[] = ["identity", "attribute", "habit", "relation"];

/** One decision of a consolidator about an entity's facts. */
export type FactEdit =
  | {
      readonly op: "add";
      readonly category: FactCategory;
      /** A stable key (model-free consolidator) that later runs find the fact by; null otherwise. */
      readonly key?: string | null;
      readonly text: string;
      readonly observations: readonly string[];
    }
  | {
      /** Same text (or none): a re-confirmation, importance grows. Other text: a revision. */
      readonly op: "update";
      readonly factId: string;
      readonly text?: string | null;
      readonly observations: readonly string[];
    }
  | {
      readonly op: "delete";
      readonly factId: string;
      readonly reason: string;
      readonly observations: readonly string[];
    }
  | { readonly op: "none" };

export interface SemanticConfig {
  /** Consolidate an entity after this many new observations of it (N, per entity, per user). */
  readonly every: number;
  /** Growth rate γ of Eq. 1: w ← w + (1 − w)·γ on each re-confirmation. */
  readonly growth: number;
  /** Importance of a new (or revised) fact: easy to revise until confirmed. */
  readonly initialImportance: number;
  /** Earlier observations of the entity a consolidation reads (the most recent ones): bounds its cost. */
  readonly historyObservations: number;
  /** A pattern becomes a fact when it holds in this share of the observations read … */
  readonly supportShare: number;
  /** … and in at least this many of them. */
  readonly minSupport: number;
  /** Edit history kept on a fact (the audit log keeps every edit). */
  readonly historyEdits: number;
  /** `model-free` (detections, co-occurrence, counts, times, text) or `chat` (the profile's chat model). */
  readonly consolidator: "model-free" | "chat";
}

export const defaultSemanticConfig: SemanticConfig = Object.freeze({
  every: 5,
  growth: 0.2,
  initialImportance: 0.5,
  historyObservations: 40,
  supportShare: 0.5,
  minSupport: 2,
  historyEdits: 20,
  consolidator: "model-free",
});

export interface FactEditRecord {
  readonly op: "add" | "confirm" | "revise";
  readonly atMs: number;
  readonly text: string;
  readonly importance: number;
  readonly observations: readonly string[];
  readonly by: string;
}

/** What a fact item's `data` holds. */
export interface FactData {
  readonly category: FactCategory;
  readonly key: string | null;
  readonly importance: number;
  readonly confirmations: number;
  /** Observations that justified it (the latest `historyObservations`). */
  readonly observations: readonly string[];
  readonly history: readonly FactEditRecord[];
  /** `user` for an identity fact written from a user's decision (a name); `consolidator` otherwise. */
  readonly origin: "user" | "consolidator";
}

/** Eq. 1, capped at 1. */
export function reinforce(importance: number, growth: number): number {
  return Math.min(1, importance + (1 - importance) * growth);
}

export function factData(item: VideoItem): FactData {
  const data = item.data as Partial<FactData>;
  return {
    category: factCategories.includes(data.category as FactCategory) ? (data.category as FactCategory) : "attribute",
    key: typeof data.key === "string" ? data.key : null,
    importance: typeof data.importance === "number" ? data.importance : 0,
    confirmations: typeof data.confirmations === "number" ? data.confirmations : 0,
    observations: Array.isArray(data.observations) ? data.observations : [],
    history: Array.isArray(data.history) ? data.history : [],
    origin: data.origin === "user" ? "user" : "consolidator",
  };
}

export interface ApplyContext {
  /** The entity whose facts these are; null for a source's (scene) facts, which name their `stream`. */
  readonly entityId: string | null;
  readonly stream?: string | null;
  readonly nowMs: number;
  /** Who decided: `model-free`, `chat:<model>`. */
  readonly by: string;
  readonly config: SemanticConfig;
  /** The observations the consolidator read: edits may cite only these; their sources become the fact's. */
  readonly observations: ReadonlyMap<string, VideoItem>;
  readonly newId: () => string;
}

export interface AppliedEdits {
  readonly put: VideoItem[];
  readonly remove: string[];
  readonly audits: VideoWrite["audits"][number][];
  /** Edits refused, with why (invalid target, identity guard, no justification). */
  readonly dropped: { readonly edit: FactEdit; readonly reason: string }[];
  readonly counts: { add: number; confirm: number; revise: number; delete: number; none: number };
}

/**
 * Applies a consolidator's edits to an entity's facts. Update and Delete must name one of its facts;
 * identity facts are never changed automatically; an edit must cite at least one observation the
 * consolidator read. Every applied edit is audited with the observations that justified it.
 */
export function applyFactEdits(
  facts: readonly VideoItem[],
  edits: readonly FactEdit[],
  context: ApplyContext,
): AppliedEdits {
  const { config } = context;
  const current = new Map(facts.filter((fact) => fact.entityId === context.entityId).map((fact) => [fact.id, fact]));
  const removed = new Set<string>();
  const touched = new Set<string>();
  const audits: AppliedEdits["audits"] = [];
  const dropped: AppliedEdits["dropped"] = [];
  const counts = { add: 0, confirm: 0, revise: 0, delete: 0, none: 0 };
  const normal = (text: string) => text.trim().toLowerCase().replace(/\s+/g, " ");

  for (const edit of edits) {
    if (edit.op === "none") {
      counts.none += 1;
      continue;
    }
    const cited = [...new Set(edit.observations)].filter((id) => context.observations.has(id));
    if (cited.length === 0) {
      dropped.push({ edit, reason: "cites no observation the consolidator read" });
      continue;
    }
    const sources = cited.flatMap((id) => context.observations.get(id)?.sources ?? []);
    const span = cited.map((id) => context.observations.get(id)).filter((item): item is VideoItem => !!item);
    if (edit.op === "add") {
      const text = edit.text.trim();
      if (!text) {
        dropped.push({ edit, reason: "empty text" });
        continue;
      }
      if (edit.category === "identity") {
        dropped.push({ edit, reason: "identity facts come only from a user's decision" });
        continue;
      }
      const same = [...current.values()].find(
        (fact) =>
          (edit.key && factData(fact).key === edit.key && normal(fact.text) === normal(text)) ||
          normal(fact.text) === normal(text),
      );
      if (same) {
        // Adding what is already known is a re-confirmation of it.
        applyUpdate(same, undefined, cited, sources, span);
        continue;
      }
      const id = context.newId();
      const record: FactEditRecord = {
        op: "add",
        atMs: context.nowMs,
        text,
        importance: config.initialImportance,
        observations: cited,
        by: context.by,
      };
      const data: FactData = {
        category: edit.category,
        key: edit.key ?? null,
        importance: config.initialImportance,
        confirmations: 0,
        observations: cited,
        history: [record],
        origin: "consolidator",
      };
      current.set(id, {
        id,
        kind: "fact",
        stream: context.stream ?? null,
        entityId: context.entityId,
        startMs: Math.min(...span.map((item) => item.startMs)),
        endMs: Math.max(...span.map((item) => item.endMs)),
        text,
        data: { ...data },
        vector: null,
        sources: [...new Set(sources)],
      });
      touched.add(id);
      counts.add += 1;
      audits.push(audit("video.fact.add", id, { ...record, category: edit.category, entity: context.entityId }));
      continue;
    }
    const target = current.get(edit.factId);
    if (!target || removed.has(edit.factId)) {
      dropped.push({ edit, reason: `no fact ${edit.factId} of entity ${context.entityId}` });
      continue;
    }
    if (factData(target).category === "identity") {
      dropped.push({ edit, reason: "identity facts are protected from automatic change" });
      continue;
    }
    if (edit.op === "delete") {
      current.delete(edit.factId);
      touched.delete(edit.factId);
      removed.add(edit.factId);
      counts.delete += 1;
      audits.push(
        audit("video.fact.delete", edit.factId, {
          entity: context.entityId,
          text: target.text,
          reason: edit.reason,
          importance: factData(target).importance,
          observations: cited,
          by: context.by,
        }),
      );
      continue;
    }
    applyUpdate(target, edit.text ?? undefined, cited, sources, span);
  }

  function applyUpdate(
    fact: VideoItem,
    text: string | undefined,
    cited: string[],
    sources: string[],
    span: VideoItem[],
  ): void {
    const data = factData(fact);
    if (data.category === "identity") return; // already at importance 1, and never rewritten
    const revise = text !== undefined && text.trim() !== "" && normal(text) !== normal(fact.text);
    const importance = revise ? config.initialImportance : reinforce(data.importance, config.growth);
    const record: FactEditRecord = {
      op: revise ? "revise" : "confirm",
      atMs: context.nowMs,
      text: revise ? (text ?? "").trim() : fact.text,
      importance,
      observations: cited,
      by: context.by,
    };
    const next: FactData = {
      ...data,
      importance,
      confirmations: data.confirmations + (revise ? 0 : 1),
      observations: [...new Set([...data.observations, ...cited])].slice(-config.historyObservations),
      history: [...data.history, record].slice(-config.historyEdits),
    };
    current.set(fact.id, {
      ...fact,
      text: record.text,
      startMs: Math.min(fact.startMs, ...span.map((item) => item.startMs)),
      endMs: Math.max(fact.endMs, ...span.map((item) => item.endMs)),
      data: { ...next },
      vector: revise ? null : fact.vector,
      sources: [...new Set([...fact.sources, ...sources])],
    });
    touched.add(fact.id);
    if (revise) counts.revise += 1;
    else counts.confirm += 1;
    audits.push(
      audit(revise ? "video.fact.revise" : "video.fact.confirm", fact.id, {
        ...record,
        previous: fact.text,
        previousImportance: data.importance,
        entity: context.entityId,
      }),
    );
  }

  return {
    put: [...touched].map((id) => current.get(id)).filter((item): item is VideoItem => !!item),
    remove: [...removed],
    audits,
    dropped,
    counts,
  };
}

/** The identity fact a user's name gives an entity: importance 1, never changed by a consolidator. */
export function identityFact(entity: VideoItem, id: string, nowMs: number): VideoItem {
  const record: FactEditRecord = {
    op: "add",
    atMs: nowMs,
    text: `is named ${entity.text}`,
    importance: 1,
    observations: [],
    by: "user",
  };
  const data: FactData = {
    category: "identity",
    key: "identity:name",
    importance: 1,
    confirmations: 0,
    observations: [],
    history: [record],
    origin: "user",
  };
  return {
    id,
    kind: "fact",
    stream: null,
    entityId: entity.id,
    startMs: nowMs,
    endMs: nowMs,
    text: record.text,
    data: { ...data },
    vector: null,
    sources: [],
  };
}

function audit(action: string, subject: string, details: Record<string, unknown>) {
  return { action, subject, details };
}
