import { cosine } from "../core/vectors.ts";
import type { ChatModel } from "../models/provider.ts";
import type { EntryDigest, Relation } from "../store/index-records.ts";

/** What the judge sees of an entry: its digest, vectors, speakers and time span. */
export interface JudgeView {
  readonly id: string;
  readonly routingText: string;
  readonly digest: EntryDigest;
  readonly vector: Float32Array;
  readonly imageVector: Float32Array | null;
  readonly timeStartMs: number;
  readonly timeEndMs: number;
}

export interface Judgement {
  readonly relation: Relation;
  readonly confidence: number;
  /** The comparator's features, recorded in the audit event. */
  readonly features: Readonly<Record<string, number | boolean | null>>;
  /** Set when the judge could not decide properly (a failed model call): the relation is then `uncertain`. */
  readonly warning?: string;
}

/** C3M's relation judge g_r(φ(m, e)): same / update / distinct / uncertain, with a confidence. */
export interface RelationJudge {
  readonly id: string;
  judge(incoming: JudgeView, candidate: JudgeView): Promise<Judgement>;
}

/**
 * Thresholds of the model-free comparator. They gate on agreement between independent signals
 * (vectors, entities, keywords, numbers, images) rather than on any one similarity, because
 * similarity alone does not make a merge safe (C3M §2.1).
 */
export interface ComparatorConfig {
  /** Routing-vector similarity for `same` (near-duplicates: the same content said again). */
  readonly sameVector: number;
  /** Keyword agreement (weighted Jaccard) for `same`. */
  readonly sameKeywords: number;
  /** Entity agreement (overlap of the smaller set) for `same` and `update`. */
  readonly entityAgreement: number;
  /** Routing-vector similarity below which two entries are about different things. */
  readonly distinctVector: number;
  /** Image similarity below which two entries' images disagree. */
  readonly imageAgreement: number;
}

export const defaultComparatorConfig: ComparatorConfig = Object.freeze({
  sameVector: 0.9,
  sameKeywords: 0.5,
  entityAgreement: 0.5,
  distinctVector: 0.45,
  imageAgreement: 0.5,
});

/** Compares two entries on entity, numbers, state cues, time, speakers, keywords and text–image agreement. */
export function compareEntries(incoming: JudgeView, candidate: JudgeView): Record<string, number | boolean | null> {
  const a = incoming.digest;
  const b = candidate.digest;
  const entitiesA = Object.keys(a.entities);
  const entitiesB = new Set(Object.keys(b.entities));
  const sharedEntities = entitiesA.filter((entity) => entitiesB.has(entity)).length;
  const smaller = Math.min(entitiesA.length, entitiesB.size);
  const numbersB = new Set(b.numbers);
  const sharedNumbers = a.numbers.filter((number) => numbersB.has(number)).length;
  const speakersB = new Set(b.speakers);
  const bothSpeak = a.speakers.length > 0 && speakersB.size > 0;
  return {
    textSimilarity: round(cosine(incoming.vector, candidate.vector)),
    imageSimilarity:
      incoming.imageVector && candidate.imageVector ? round(cosine(incoming.imageVector, candidate.imageVector)) : null,
    entityAgreement: smaller === 0 ? null : round(sharedEntities / smaller),
    keywordAgreement: round(weightedJaccard(a.keywords, b.keywords)),
    numbersConflict:
      a.numbers.length > 0 && b.numbers.length > 0 && sharedNumbers < Math.min(a.numbers.length, numbersB.size),
    stateChange: a.stateCues > 0,
    later: incoming.timeStartMs >= candidate.timeEndMs,
    speakersShared: bothSpeak ? a.speakers.some((speaker) => speakersB.has(speaker)) : null,
  };
}

/** The default judge: rules over `compareEntries`, no model. */
export class ComparatorJudge implements RelationJudge {
  readonly id = "comparator";
  readonly #config: ComparatorConfig;
  constructor(config: Partial<ComparatorConfig> = {}) {
    this.#config = { ...defaultComparatorConfig, ...config };
  }

  async judge(incoming: JudgeView, candidate: JudgeView): Promise<Judgement> {
    return decide(compareEntries(incoming, candidate), this.#config);
  }
}

export function decide(features: Record<string, number | boolean | null>, config: ComparatorConfig): Judgement {
  const text = features.textSimilarity as number;
  const image = features.imageSimilarity as number | null;
  const entities = features.entityAgreement as number | null;
  const keywords = features.keywordAgreement as number;
  const imagesDisagree = image !== null && image < config.imageAgreement;
  const entitiesAgree = entities === null ? keywords >= config.sameKeywords : entities >= config.entityAgreement;
  if (features.speakersShared === false) return { relation: "distinct", confidence: 0.9, features };
  if (text < config.distinctVector || (entities !== null && entities === 0 && keywords < 0.1)) {
    return { relation: "distinct", confidence: round(Math.min(0.95, 0.6 + (config.distinctVector - text))), features };
  }
  // Text that agrees over pictures that do not: two different things described alike.
  if (imagesDisagree) return { relation: "distinct", confidence: 0.75, features };
  const changed = features.stateChange === true || features.numbersConflict === true;
  if (entitiesAgree && changed && features.later === true) {
    // A later state of the same entity: more evidence of change and of sameness, more confidence.
    const confidence =
      0.45 +
      (features.stateChange === true ? 0.15 : 0) +
      (features.numbersConflict === true ? 0.15 : 0) +
      0.15 * (entities ?? keywords) +
      0.1 * Math.max(0, (text - config.distinctVector) / (1 - config.distinctVector));
    return { relation: "update", confidence: round(Math.min(0.95, confidence)), features };
  }
  if (text >= config.sameVector && keywords >= config.sameKeywords && entitiesAgree && !changed) {
    const confidence = 0.4 + 0.3 * ((text - config.sameVector) / (1 - config.sameVector)) + 0.3 * keywords;
    return { relation: "same", confidence: round(Math.min(0.98, confidence + (image !== null ? 0.1 : 0))), features };
  }
  return { relation: "uncertain", confidence: 0.5, features };
}

/**
 * An LLM judge through any OpenAI-compatible chat model with JSON-schema output. A failed call or
 * an invalid answer is `uncertain` with a warning: never a silent merge.
 */
export class ChatJudge implements RelationJudge {
  readonly id: string;
  readonly #chat: ChatModel;
  constructor(chat: ChatModel) {
    this.#chat = chat;
    this.id = `chat:${chat.id}`;
  }

  async judge(incoming: JudgeView, candidate: JudgeView): Promise<Judgement> {
    const features = compareEntries(incoming, candidate);
    try {
      const answer = await this.#chat.completeJson(
        [
          {
            role: "system",
            content:
              "You maintain an agent's memory index. Compare an EXISTING memory entry with an INCOMING one. " +
              "Answer 'same' only if they describe the same stable fact compatibly (safe to merge); 'update' if the " +
              "incoming one is a later state of the same entity (the old one is now outdated); 'distinct' if they " +
              "concern different entities, times or actions; 'uncertain' otherwise. Give a confidence in [0, 1].",
          },
          {
            role: "user",
            content: `EXISTING (${new Date(candidate.timeStartMs).toISOString()}):\n${candidate.routingText}\n\nINCOMING (${new Date(incoming.timeStartMs).toISOString()}):\n${incoming.routingText}`,
          },
        ],
        {
          name: "relation",
          jsonSchema: {
            type: "object",
            additionalProperties: false,
            required: ["relation", "confidence"],
            properties: {
              relation: { type: "string", enum: ["same", "update", "distinct", "uncertain"] },
              confidence: { type: "number", minimum: 0, maximum: 1 },
            },
          },
          parse: parseRelationAnswer,
        },
      );
      return { ...answer, features };
    } catch (error) {
      return {
        relation: "uncertain",
        confidence: 0,
        features,
        warning: `relation judge ${this.id} failed, kept the entries apart: ${(error as Error).message}`,
      };
    }
  }
}

function parseRelationAnswer(value: unknown): { relation: Relation; confidence: number } {
  const { relation, confidence } = (value ?? {}) as Record<string, unknown>;
  if (relation !== "same" && relation !== "update" && relation !== "distinct" && relation !== "uncertain") {
    throw new Error(`relation must be same, update, distinct or uncertain, got ${JSON.stringify(relation)}`);
  }
  if (typeof confidence !== "number" || !(confidence >= 0 && confidence <= 1)) {
    throw new Error(`confidence must be a number in [0, 1], got ${JSON.stringify(confidence)}`);
  }
  return { relation, confidence };
}

function weightedJaccard(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): number {
  let min = 0;
  let max = 0;
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = a[key] ?? 0;
    const y = b[key] ?? 0;
    min += Math.min(x, y);
    max += Math.max(x, y);
  }
  return max === 0 ? 0 : min / max;
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
