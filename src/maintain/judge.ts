import { ConfigError } from "../core/errors.ts";
import { isRecord } from "../core/narrow.ts";
import { roundForRecord } from "../core/round.ts";
import { cosine } from "../core/vectors.ts";
import type { ChatModel, Models } from "../models/provider.ts";
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

/** Chosen for the reasons in `ComparatorConfig`'s fields and not fitted to a dataset (decision 005). */
export const defaultComparatorConfig: ComparatorConfig = Object.freeze({
  /** Near-identical vectors: a restatement, not merely the same topic (decision 005: "≥ 0.9"). */
  sameVector: 0.9,
  /** At least half the keyword mass shared. */
  sameKeywords: 0.5,
  /** At least half the smaller entity set shared. */
  entityAgreement: 0.5,
  /** Below this two entries are about different things (ramu.ts opens a new page at the same similarity). */
  distinctVector: 0.45,
  /** Images this dissimilar show different things, whatever the text says. */
  imageAgreement: 0.5,
});

/** What `compareEntries` measures; recorded in the audit event as the judgement's features. */
export type ComparatorFeatures = {
  readonly textSimilarity: number;
  readonly imageSimilarity: number | null;
  readonly entityAgreement: number | null;
  readonly keywordAgreement: number;
  readonly numbersConflict: boolean;
  readonly stateChange: boolean;
  readonly later: boolean;
  readonly speakersShared: boolean | null;
};

/** Compares two entries on entity, numbers, state cues, time, speakers, keywords and text–image agreement. */
export function compareEntries(incoming: JudgeView, candidate: JudgeView): ComparatorFeatures {
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
    textSimilarity: roundForRecord(cosine(incoming.vector, candidate.vector)),
    imageSimilarity:
      incoming.imageVector && candidate.imageVector
        ? roundForRecord(cosine(incoming.imageVector, candidate.imageVector))
        : null,
    entityAgreement: smaller === 0 ? null : roundForRecord(sharedEntities / smaller),
    keywordAgreement: roundForRecord(weightedJaccard(a.keywords, b.keywords)),
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

/*
 * The comparator's confidences. RAMU acts on its most confident candidate and merges or updates
 * only at δ (0.7 by default), so each is placed against δ and against the others; set with the
 * comparator (5e72df4) for these reasons, not fitted to a dataset (decision 005).
 */
/** Different speakers: two people's facts, the surest `distinct`. */
const distinctSpeakersConfidence = 0.9;
/** No shared entity and under a tenth of the keyword mass shared: about different things. */
const distinctKeywordFloor = 0.1;
/** `distinct` by dissimilar text: this at the `distinctVector` bar, rising as the text differs more... */
const distinctTextBase = 0.6;
/** ...to at most this: a rule over a few features is never certain. */
const distinctTextCap = 0.95;
/** Agreeing text over disagreeing images: sure, less so than different speakers. */
const imagesDisagreeConfidence = 0.75;
/** `update` starts under δ: change evidence and agreement must add up before an entry is superseded. */
const updateBase = 0.45;
/** Added for each kind of change evidence (a state cue, a conflicting number). */
const updateChangeCue = 0.15;
/** Weight of entity (else keyword) agreement in an `update`. */
const updateAgreement = 0.15;
/** Weight of text similarity above `distinctVector` in an `update`: the least of the signals. */
const updateText = 0.1;
/** An inferred change is never near certain. */
const updateCap = 0.95;
/** `same` starts under δ: vectors, keywords and images must agree together before a merge. */
const sameBase = 0.4;
/** Weight of vector similarity beyond the `sameVector` bar in a `same`. */
const sameText = 0.3;
/** Weight of keyword agreement in a `same`. */
const sameKeywords = 0.3;
/** Added when both sides have images, which then agree (disagreeing ones were `distinct` above). */
const sameImageBonus = 0.1;
/** The highest any rule gives: a restatement confirmed by every signal. */
const sameCap = 0.98;
/** Neither rule fired: under δ, so RAMU keeps the entries apart. */
const uncertainConfidence = 0.5;

export function decide(features: ComparatorFeatures, config: ComparatorConfig): Judgement {
  const text = features.textSimilarity;
  const image = features.imageSimilarity;
  const entities = features.entityAgreement;
  const keywords = features.keywordAgreement;
  const imagesDisagree = image !== null && image < config.imageAgreement;
  const entitiesAgree = entities === null ? keywords >= config.sameKeywords : entities >= config.entityAgreement;
  if (features.speakersShared === false)
    return { relation: "distinct", confidence: distinctSpeakersConfidence, features };
  if (text < config.distinctVector || (entities !== null && entities === 0 && keywords < distinctKeywordFloor)) {
    const confidence = roundForRecord(Math.min(distinctTextCap, distinctTextBase + (config.distinctVector - text)));
    return { relation: "distinct", confidence, features };
  }
  // Text that agrees over pictures that do not: two different things described alike.
  if (imagesDisagree) return { relation: "distinct", confidence: imagesDisagreeConfidence, features };
  const changed = features.stateChange === true || features.numbersConflict === true;
  if (entitiesAgree && changed && features.later === true) {
    // A later state of the same entity: more evidence of change and of sameness, more confidence.
    const confidence =
      updateBase +
      (features.stateChange === true ? updateChangeCue : 0) +
      (features.numbersConflict === true ? updateChangeCue : 0) +
      updateAgreement * (entities ?? keywords) +
      updateText * Math.max(0, (text - config.distinctVector) / (1 - config.distinctVector));
    return { relation: "update", confidence: roundForRecord(Math.min(updateCap, confidence)), features };
  }
  if (text >= config.sameVector && keywords >= config.sameKeywords && entitiesAgree && !changed) {
    const confidence =
      sameBase + sameText * ((text - config.sameVector) / (1 - config.sameVector)) + sameKeywords * keywords;
    const withImages = confidence + (image !== null ? sameImageBonus : 0);
    return { relation: "same", confidence: roundForRecord(Math.min(sameCap, withImages)), features };
  }
  return { relation: "uncertain", confidence: uncertainConfidence, features };
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
        warning: `relation judge ${this.id} failed, kept the entries apart: ${messageOf(error)}`,
      };
    }
  }
}

function parseRelationAnswer(value: unknown): { relation: Relation; confidence: number } {
  const { relation, confidence } = isRecord(value) ? value : {};
  if (relation !== "same" && relation !== "update" && relation !== "distinct" && relation !== "uncertain") {
    throw new Error(`relation must be same, update, distinct or uncertain, got ${JSON.stringify(relation)}`);
  }
  if (typeof confidence !== "number" || !(confidence >= 0 && confidence <= 1)) {
    throw new Error(`confidence must be a number in [0, 1], got ${JSON.stringify(confidence)}`);
  }
  return { relation, confidence };
}

function weightedJaccard(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): number {
  // a's keys, then b's others, in that order (as a set of both would visit them), without building the set.
  let min = 0;
  let max = 0;
  for (const key in a) {
    const x = a[key] ?? 0;
    const y = b[key] ?? 0;
    min += Math.min(x, y);
    max += Math.max(x, y);
  }
  for (const key in b) {
    if (Object.hasOwn(a, key)) continue;
    max += b[key] ?? 0;
  }
  return max === 0 ? 0 : min / max;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The judge a memory was configured with: the model-free comparator, the chat model's (an LLM judge), or one given. */
export function resolveJudge(judge: "comparator" | "chat" | RelationJudge, models: Models): RelationJudge {
  if (judge === "comparator") return new ComparatorJudge();
  if (judge === "chat") {
    if (!models.chat) throw new ConfigError(`judge "chat" needs a chat model; the ${models.profile} profile has none`);
    return new ChatJudge(models.chat);
  }
  return judge;
}
