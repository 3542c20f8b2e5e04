import type { VideoItem } from "../../store/video-records.ts";
import type { FactEdit, SemanticConfig } from "./facts.ts";
import { factData } from "./facts.ts";

/** What a consolidator reads about one entity: its earlier episodes and its current facts. */
export interface ConsolidationInput {
  readonly entity: VideoItem;
  /** The entity's current facts (identity facts included; they are read, never changed). */
  readonly facts: readonly VideoItem[];
  /** Its earlier observations, oldest first, the current segment excluded (no self-evidence). */
  readonly observations: readonly VideoItem[];
  /** Who else was in the same segments: observation id → labels of the other entities there. */
  readonly companions: ReadonlyMap<string, readonly { id: string; label: string }[]>;
  /** Text read on the key frames of the observations' segments (OCR), by observation id. */
  readonly texts: ReadonlyMap<string, string>;
}

/** Reads an entity's history and decides Add / Update / Delete / no change for its facts. */
export interface Consolidator {
  readonly id: string;
  consolidate(input: ConsolidationInput): Promise<{ edits: FactEdit[]; warnings: string[] }>;
}

/** A pattern the model-free consolidator found: a key, its statement, the observations it holds in. */
export interface Pattern {
  readonly key: string;
  readonly category: "attribute" | "habit" | "relation";
  readonly text: string;
  readonly support: readonly string[];
}

/**
 * The model-free consolidator: facts from what perception measured — how the entity is seen (face
 * or not), the objects near it, who it appears with, the streams and hours it appears in, whether it
 * moves, and text read near it — each kept when it holds in `supportShare` of the observations read
 * and at least `minSupport` of them. A known pattern seen again in new observations is confirmed,
 * one whose statement changed is revised, one no longer supported is deleted.
 */
export function modelFreeConsolidator(config: SemanticConfig): Consolidator {
  return {
    id: "model-free",
    async consolidate(input) {
      return {
        edits: editsFromPatterns(findPatterns(input, config), input.facts, input.observations, config),
        warnings: [],
      };
    },
  };
}

/**
 * Turns the patterns found in a subject's history into edits of its facts: a new pattern is added, a
 * known one seen in observations it has not counted yet is confirmed (Eq. 1), one whose statement
 * changed is revised, and one no longer found is deleted once enough history was read to say so.
 */
export function editsFromPatterns(
  patterns: readonly Pattern[],
  facts: readonly VideoItem[],
  observations: readonly VideoItem[],
  config: SemanticConfig,
): FactEdit[] {
  const byKey = new Map<string, VideoItem>();
  for (const fact of facts) {
    const key = factData(fact).key;
    if (key && factData(fact).origin === "consolidator") byKey.set(key, fact);
  }
  const edits: FactEdit[] = [];
  const found = new Set<string>();
  for (const pattern of patterns) {
    const exclusive = exclusiveKey(pattern.key);
    found.add(exclusive);
    const existing = byKey.get(exclusive);
    if (!existing) {
      edits.push({
        op: "add",
        category: pattern.category,
        key: exclusive,
        text: pattern.text,
        observations: pattern.support,
      });
      continue;
    }
    const seen = new Set(factData(existing).observations);
    const fresh = pattern.support.filter((id) => !seen.has(id));
    if (existing.text !== pattern.text) {
      edits.push({ op: "update", factId: existing.id, text: pattern.text, observations: pattern.support });
    } else if (fresh.length > 0) {
      // Re-confirmed only by evidence it has not counted yet.
      edits.push({ op: "update", factId: existing.id, observations: fresh });
    } else {
      edits.push({ op: "none" });
    }
  }
  const latest = observations.slice(-config.minSupport).map((item) => item.id);
  for (const [key, fact] of byKey) {
    if (found.has(key) || observations.length < config.minSupport) continue;
    edits.push({
      op: "delete",
      factId: fact.id,
      reason: `no longer holds in ${config.supportShare * 100}% of the last ${observations.length} observations`,
      observations: latest,
    });
  }
  return edits;
}

/** Keys whose statements exclude each other share one fact (a view that flips is a revision). */
function exclusiveKey(key: string): string {
  return key.replace(/^(view|motion|hours|people|voice):.*$/, "$1");
}

function findPatterns(input: ConsolidationInput, config: SemanticConfig): Pattern[] {
  const observations = input.observations;
  const total = observations.length;
  if (total === 0) return [];
  const holds = (support: readonly string[]) =>
    support.length >= config.minSupport && support.length / total >= config.supportShare;
  const patterns: Pattern[] = [];
  const where = (test: (item: VideoItem) => boolean) => observations.filter(test).map((item) => item.id);

  const faces = where((item) => item.data.faceVisible === true);
  const backs = where((item) => item.data.faceVisible === false);
  if (holds(faces) && faces.length >= backs.length)
    patterns.push({ key: "view:face", category: "attribute", text: "usually seen with a clear face", support: faces });
  else if (holds(backs))
    patterns.push({
      key: "view:back",
      category: "attribute",
      text: "usually seen without a clear face (from behind or far away)",
      support: backs,
    });

  const moving = where((item) => item.data.moving === true);
  const still = where((item) => item.data.moving === false);
  if (holds(moving) && moving.length >= still.length)
    patterns.push({ key: "motion:moving", category: "habit", text: "usually moving when seen", support: moving });
  else if (holds(still))
    patterns.push({ key: "motion:still", category: "habit", text: "usually standing still when seen", support: still });

  const labels = new Set(observations.flatMap((item) => strings(item.data.objects)));
  for (const label of [...labels].sort()) {
    const support = where((item) => strings(item.data.objects).includes(label));
    if (holds(support))
      patterns.push({ key: `near:${label}`, category: "relation", text: `often seen near a ${label}`, support });
  }

  const companions = new Map<string, { label: string; support: string[] }>();
  for (const item of observations) {
    for (const other of input.companions.get(item.id) ?? []) {
      const entry = companions.get(other.id) ?? { label: other.label, support: [] };
      entry.support.push(item.id);
      companions.set(other.id, entry);
    }
  }
  for (const [id, { label, support }] of [...companions].sort(([a], [b]) => a.localeCompare(b))) {
    if (support.length >= config.minSupport)
      patterns.push({ key: `with:${id}`, category: "relation", text: `often appears together with ${label}`, support });
  }

  const streams = new Map<string, string[]>();
  for (const item of observations) {
    const source = (item.stream ?? "").replace(/@[^@]*$/, "");
    if (source) streams.set(source, [...(streams.get(source) ?? []), item.id]);
  }
  for (const [source, support] of [...streams].sort(([a], [b]) => a.localeCompare(b))) {
    if (support.length >= config.minSupport)
      patterns.push({ key: `source:${source}`, category: "habit", text: `appears in ${source}`, support });
  }

  const hours = new Map<number, string[]>();
  for (const item of observations) {
    const hour = new Date(item.startMs).getUTCHours();
    hours.set(hour, [...(hours.get(hour) ?? []), item.id]);
  }
  const [hour, support] = [...hours].sort((a, b) => b[1].length - a[1].length || a[0] - b[0])[0] ?? [0, []];
  if (holds(support))
    patterns.push({
      key: `hours:${hour}`,
      category: "habit",
      text: `usually seen between ${pad(hour)}:00 and ${pad((hour + 1) % 24)}:00 UTC`,
      support,
    });

  const words = new Map<string, string[]>();
  for (const item of observations) {
    const text = input.texts.get(item.id) ?? "";
    for (const word of new Set(text.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? []))
      words.set(word, [...(words.get(word) ?? []), item.id]);
  }
  for (const [word, support] of [...words].sort(([a], [b]) => a.localeCompare(b))) {
    if (holds(support))
      patterns.push({ key: `text:${word}`, category: "attribute", text: `seen with the text "${word}"`, support });
  }
  return patterns;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === "string") : [];
}

const pad = (hour: number) => String(hour).padStart(2, "0");
