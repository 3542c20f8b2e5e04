import { contentWords } from "../core/text.ts";
import { cosine } from "../core/vectors.ts";

/** A banked question as matching sees it. */
export interface BankCandidate {
  readonly id: string;
  readonly question: string;
  /** The words its program searches for (the evidence's own words); matched beside the question's. */
  readonly terms?: readonly string[];
  readonly vector: Float32Array | null;
  readonly imageVector: Float32Array | null;
}

/**
 * A bank made ready for matching: each entry's match words and every word's document frequency,
 * computed once per bank state instead of once per query (`prepareBank`).
 */
export interface PreparedBank {
  readonly entries: readonly BankCandidate[];
  readonly documents: readonly ReadonlySet<string>[];
  /** Each word's IDF over the bank's entries (a word no entry holds: `unseenIdf`). */
  readonly idf: ReadonlyMap<string, number>;
  readonly unseenIdf: number;
  /** Each entry's IDF mass, in `entries` order. */
  readonly documentMass: readonly number[];
}

export function prepareBank(bank: readonly BankCandidate[]): PreparedBank {
  const documents = bank.map((entry) => entryTerms(entry));
  const containing = new Map<string, number>();
  for (const words of documents) for (const word of words) containing.set(word, (containing.get(word) ?? 0) + 1);
  const idfOf = (count: number) => Math.log(1 + (bank.length - count + 0.5) / (count + 0.5));
  const idf = new Map([...containing].map(([word, count]) => [word, idfOf(count)]));
  const documentMass = documents.map((words) => {
    let sum = 0;
    for (const word of words) sum += idf.get(word) ?? 0;
    return sum;
  });
  return { entries: bank, documents, idf, unseenIdf: idfOf(0), documentMass };
}

export interface BankQuery {
  readonly text: string;
  readonly vector: Float32Array | undefined;
  readonly imageVector: Float32Array | undefined;
}

export type MatchChannel = "bm25" | "dense" | "image";

/**
 * Where a channel's raw similarity sits for an unrelated question (`floor`) and for a paraphrase of a
 * banked one (`ceiling`), measured on the labelled check (bench/pmmc-calibrate.ts): the score reads
 * (s − floor) / (ceiling − floor), clamped to [0, 1]. Identity is { floor: 0, ceiling: 1 }.
 */
export interface ChannelCalibration {
  readonly floor: number;
  readonly ceiling: number;
}
export type MatchCalibration = Partial<Record<MatchChannel, ChannelCalibration>>;

export interface BankMatch {
  readonly id: string;
  /** Normalised score in [0, 1]: 1 only for a question ranked first by every channel with similarity 1. */
  readonly score: number;
  readonly channels: Partial<Record<MatchChannel, { readonly rank: number; readonly similarity: number }>>;
}

/**
 * Matches a query against the bank's questions by a similarity-weighted reciprocal-rank fusion,
 * normalised so PMMC's gate (α_route, δ) reads on a fixed scale (docs/decisions/010):
 *
 *   score(b) = (1/|C|) · Σ_c cal_c(s_c(q, b)) · (k + 1) / (k + rank_c(b))
 *
 * over the channels C the query can use (BM25 when it has words, dense when it has a vector,
 * image when it has an image). s_c is a raw similarity in [0, 1] — for BM25 the IDF-weighted overlap
 * of the query's words and the entry's (its question less the templates' wording, plus its program's
 * search words), for dense and image the cosine (negatives as 0). cal_c maps it piecewise-linearly
 * through (floor, 0), (ceiling, gateLevel), (1, 1): floor is what an unrelated question reaches, ceiling
 * what a typical paraphrase reaches (measured on the labelled check; identity when not given, and the
 * bank's own background similarity as the image channel's floor). The rank factor is RRF's
 * 1/(k + rank) scaled to 1 at rank 1. Pure.
 */
export function matchBank(
  query: BankQuery,
  candidates: readonly BankCandidate[] | PreparedBank,
  rrfK: number,
  calibration: MatchCalibration = {},
  /** What a paraphrase at a channel's calibrated ceiling reads (α_route: the gate means "a typical paraphrase"). */
  gateLevel = 1,
): BankMatch[] {
  const prepared = "documents" in candidates ? candidates : prepareBank(candidates);
  const bank = prepared.entries;
  const lists: [MatchChannel, { id: string; similarity: number }[]][] = [];
  const terms = [...new Set(contentWords(query.text))];
  if (terms.length > 0) lists.push(["bm25", lexical(terms, prepared)]);
  if (query.vector) {
    const vector = query.vector;
    lists.push([
      "dense",
      bank.map((entry) => ({ id: entry.id, similarity: entry.vector ? Math.max(0, cosine(vector, entry.vector)) : 0 })),
    ]);
  }
  if (query.imageVector) {
    const vector = query.imageVector;
    lists.push([
      "image",
      bank.map((entry) => ({
        id: entry.id,
        similarity: entry.imageVector ? Math.max(0, cosine(vector, entry.imageVector)) : 0,
      })),
    ]);
  }
  if (lists.length === 0) return [];
  const scores = new Map<string, { score: number; channels: BankMatch["channels"] }>();
  for (const [channel, list] of lists) {
    const ranked = list.filter((item) => item.similarity > 0).sort((a, b) => b.similarity - a.similarity);
    const { floor, ceiling } = calibration[channel] ?? (channel === "image" ? background(ranked) : identity);
    ranked.forEach((item, index) => {
      const rank = index + 1;
      const current = scores.get(item.id) ?? { score: 0, channels: {} };
      const calibrated = calibrate(item.similarity, floor, ceiling, gateLevel);
      current.score += (calibrated * (rrfK + 1)) / (rrfK + rank) / lists.length;
      scores.set(item.id, {
        score: current.score,
        channels: { ...current.channels, [channel]: { rank, similarity: item.similarity } },
      });
    });
  }
  return [...scores.entries()]
    .map(([id, { score, channels }]) => ({ id, score: Math.min(1, score), channels }))
    .sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
}

const identity: ChannelCalibration = { floor: 0, ceiling: 1 };

/**
 * The image channel without a measured calibration (no labelled image set exists): its floor is the
 * query image's median similarity to the bank's images, so an embedder that finds every picture alike
 * (the hash profile's byte histogram: cosine ≈ 0.98 for any two photos) adds nothing, and only a
 * program resting on (nearly) the pictured evidence scores high; the ceiling is the same picture.
 */
function background(ranked: readonly { similarity: number }[]): ChannelCalibration {
  const others = ranked
    .slice(1)
    .map((item) => item.similarity)
    .sort((a, b) => a - b);
  return { floor: others[Math.floor((others.length - 1) / 2)] ?? 0, ceiling: 1 };
}

/**
 * Piecewise-linear through (floor, 0), (ceiling, level) and (1, 1): a similarity an unrelated question
 * reaches reads 0, the one a typical paraphrase reaches reads `level` (the gate), and identity reads 1,
 * so the scale keeps telling an exact match from a paraphrase above the gate.
 */
function calibrate(similarity: number, floor: number, ceiling: number, level: number): number {
  if (similarity <= floor) return 0;
  if (ceiling >= 1) return Math.min(1, (similarity - floor) / Math.max(1e-6, 1 - floor));
  if (similarity <= ceiling) return (level * (similarity - floor)) / Math.max(1e-6, ceiling - floor);
  return Math.min(1, level + ((1 - level) * (similarity - ceiling)) / (1 - ceiling));
}

/**
 * IDF-weighted overlap between the query's words and a bank entry's (its question's words, less the
 * templates' own wording, plus its program's search words): the shared IDF mass over the smaller side's
 * mass. A long, chatty query is not penalised for its extra words, nor a short question for its few.
 */
function lexical(terms: readonly string[], prepared: PreparedBank): { id: string; similarity: number }[] {
  const { entries: bank, documents, idf, unseenIdf, documentMass } = prepared;
  const mass = (words: Iterable<string>) => {
    let sum = 0;
    for (const word of words) sum += idf.get(word) ?? unseenIdf;
    return sum;
  };
  const queryMass = mass(terms);
  return bank.map((entry, index) => {
    const words: ReadonlySet<string> = documents[index] ?? new Set<string>();
    const covered = mass(terms.filter((term) => words.has(term)));
    const smaller = Math.min(queryMass, documentMass[index] ?? 0);
    return { id: entry.id, similarity: smaller > 0 ? Math.min(1, covered / smaller) : 0 };
  });
}

/** Words that only say which template asked (the model-free Questioner's own wording), not what about. */
export const templateWords: ReadonlySet<string> = new Set(
  contentWords(
    "look photo picture image show shown shared share called call name named change changed time before first " +
      "correct corrected right mind favourite enjoy prefer now user",
  ),
);

function entryTerms(entry: BankCandidate): ReadonlySet<string> {
  const own = contentWords(entry.question).filter((word) => !templateWords.has(word));
  return new Set([...own, ...(entry.terms ?? []).flatMap((term) => contentWords(term))]);
}

/** The words a banked program searches for (its lexical, dense and image-match steps' query texts). */
export function programTerms(program: unknown): string[] {
  const steps = (program as { steps?: unknown } | null)?.steps;
  if (!Array.isArray(steps)) return [];
  return steps.flatMap((step: { query?: unknown; text?: unknown }) =>
    [step.query, step.text].filter((value): value is string => typeof value === "string"),
  );
}

/**
 * The match a banked program must lead by δ: the best one resting on other evidence. Two wordings of
 * one prediction (the same evidence) are not rivals: either runs a program that returns that evidence.
 */
export function runnerUp<T extends { readonly id: string }>(
  matches: readonly T[],
  evidenceOf: (id: string) => readonly string[] | undefined,
): T | undefined {
  const [best, ...rest] = matches;
  if (!best) return undefined;
  const key = (id: string) => [...(evidenceOf(id) ?? [id])].sort().join(" ");
  const bestKey = key(best.id);
  return rest.find((match) => key(match.id) !== bestKey);
}
