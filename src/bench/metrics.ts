import type { BenchQuestion } from "./dataset.ts";
import type { Retrieval } from "./method.ts";

/** How a raw node is named in the dataset's own ids. */
export interface DatasetIds {
  readonly turn: string | null;
  readonly session: string;
  readonly images: readonly string[];
}

export interface QuestionScore {
  readonly id: string;
  readonly category: string;
  /** Evidence recall of the final pack; null where the question has no gold at that level. */
  readonly recall: { readonly turn: number | null; readonly session: number | null; readonly image: number | null };
  /**
   * C3M Route-Hit: share of gold turns (or sessions when no turn gold) among the first `routeHitDepth(budget)`
   * candidates a routed method ranked; null for a method that does not route (its candidate list is not a
   * routed set, and its depth is whatever the method happens to fetch).
   */
  readonly routeHit: number | null;
  /** C3M Support Recall: the same share in the final pack (turn recall, or session recall without turn gold); routed methods only. */
  readonly supportRecall: number | null;
  /**
   * Turn recall of the pack when the raw-node budget is k (the other budget dimensions unchanged), and the
   * reciprocal rank of the first gold turn in the k = 10 pack (MRR@10); null without turn gold or when not measured.
   */
  readonly atK?: {
    readonly recall: Readonly<Record<RankDepth, number | null>>;
    readonly mrr10: number | null;
  };
  /** Turn-level gold in the first k of the pack (any gold counts). */
  readonly hitAt: { readonly 1: number | null; readonly 5: number | null; readonly 10: number | null };
  readonly mrr: number | null;
  /** Whether a gold image reached the reader; null without image gold. */
  readonly imageHit: number | null;
  readonly textTokens: number;
  readonly images: number;
  /** Retrieval time without query embedding. */
  readonly latencyMs: number;
  readonly emptyGold: boolean;
  /** The pack in dataset turn ids, best first (for paired comparisons between runs). */
  readonly retrievedTurns: readonly string[];
  readonly gold: BenchQuestion["gold"];
  /**
   * For compiled methods: whether a program passed the gate and ran, and PMMC's Cover@5 (a top-5
   * bank match whose evidence holds gold) and Match@5 (such a match that also passes α_route).
   */
  readonly compiled?: {
    readonly routed: boolean;
    readonly ran: boolean;
    readonly fused?: boolean;
    /** The best bank match's normalised score (null for an empty bank). */
    readonly best: number | null;
    readonly cover5: number | null;
    readonly match5: number | null;
  };
}

/** The raw-node budgets at which the harness reads every method again for recall@k (and MRR@10 at k = 10). */
export const rankDepths = [5, 10, 20] as const;
export type RankDepth = (typeof rankDepths)[number];

/**
 * How deep Route-Hit looks into a routed method's candidates: four times the raw-node budget, the depth the
 * routed read fetches raw nodes to (routed-search.ts), so every routed method is judged on the same depth.
 */
export function routeHitDepth(budgetRawNodes: number): number {
  return Math.max(48, 4 * budgetRawNodes);
}

/** Turn recall@k and MRR@10 from the packs a method gave at raw-node budgets 5, 10 and 20. Pure. */
export function scoreAtK(
  question: BenchQuestion,
  packs: Readonly<Record<RankDepth, readonly string[]>>,
  idsOf: (rawNodeId: string) => DatasetIds | undefined,
): NonNullable<QuestionScore["atK"]> {
  const { turns } = question.gold;
  const turnsOf = (selected: readonly string[]) =>
    selected.map((id) => idsOf(id)?.turn ?? null).filter((turn): turn is string => turn !== null);
  const recallOf = (k: RankDepth) => recall(turns, new Set(turnsOf(packs[k]).slice(0, k)));
  const firstGold = turnsOf(packs[10])
    .slice(0, 10)
    .findIndex((turn) => turns.includes(turn));
  return {
    recall: { 5: recallOf(5), 10: recallOf(10), 20: recallOf(20) },
    mrr10: turns.length === 0 ? null : firstGold >= 0 ? 1 / (firstGold + 1) : 0,
  };
}

/** Scores one question's retrieval against its gold. Pure. */
export function scoreQuestion(
  question: BenchQuestion,
  retrieval: Retrieval,
  idsOf: (rawNodeId: string) => DatasetIds | undefined,
  latencyMs: number,
  budgetRawNodes = 12,
): QuestionScore {
  const selected = retrieval.selected.map(idsOf).filter((ids): ids is DatasetIds => ids !== undefined);
  const candidates = retrieval.candidates
    .slice(0, routeHitDepth(budgetRawNodes))
    .map(idsOf)
    .filter((ids): ids is DatasetIds => ids !== undefined);
  const delivered = new Set(retrieval.imagesDelivered);
  const imagesRead = new Set(
    retrieval.selected.filter((id) => delivered.has(id)).flatMap((id) => idsOf(id)?.images ?? []),
  );
  const turnsRead = selected.map((ids) => ids.turn).filter((turn): turn is string => turn !== null);
  const { turns, sessions, images } = question.gold;
  const turnRecall = recall(turns, new Set(turnsRead));
  const sessionRecall = recall(sessions, new Set(selected.map((ids) => ids.session)));
  const routeLevel = turns.length > 0 ? "turn" : "session";
  const candidateIds = new Set(candidates.map((ids) => (routeLevel === "turn" ? ids.turn : ids.session)));
  const firstGold = turnsRead.findIndex((turn) => turns.includes(turn));
  const hit = (k: number) => (turns.length === 0 ? null : firstGold >= 0 && firstGold < k ? 1 : 0);
  return {
    id: question.id,
    category: question.category,
    recall: { turn: turnRecall, session: sessionRecall, image: recall(images, imagesRead) },
    routeHit: retrieval.routed ? recall(routeLevel === "turn" ? turns : sessions, candidateIds) : null,
    supportRecall: retrieval.routed ? (routeLevel === "turn" ? turnRecall : sessionRecall) : null,
    hitAt: { 1: hit(1), 5: hit(5), 10: hit(10) },
    mrr: turns.length === 0 ? null : firstGold >= 0 ? 1 / (firstGold + 1) : 0,
    imageHit: images.length === 0 ? null : images.some((image) => imagesRead.has(image)) ? 1 : 0,
    textTokens: retrieval.textTokens,
    images: retrieval.images,
    latencyMs,
    emptyGold: turns.length === 0 && sessions.length === 0 && images.length === 0,
    retrievedTurns: turnsRead,
    gold: question.gold,
    ...(retrieval.compiled ? { compiled: compiledScore(question, retrieval.compiled, idsOf) } : {}),
  };
}

/** Gold at the finest level the question has it (turns, else images, else sessions), as a raw-node test. */
function compiledScore(
  question: BenchQuestion,
  compiled: NonNullable<Retrieval["compiled"]>,
  idsOf: (rawNodeId: string) => DatasetIds | undefined,
): NonNullable<QuestionScore["compiled"]> {
  const { turns, images, sessions } = question.gold;
  const holdsGold = (rawNodeId: string) => {
    const ids = idsOf(rawNodeId);
    if (!ids) return false;
    if (turns.length > 0) return ids.turn !== null && turns.includes(ids.turn);
    if (images.length > 0) return ids.images.some((image) => images.includes(image));
    return sessions.includes(ids.session);
  };
  const scored = turns.length + images.length + sessions.length > 0;
  const covering = compiled.top.slice(0, 5).filter((match) => match.evidence.some(holdsGold));
  return {
    routed: compiled.routed,
    ran: compiled.ran,
    fused: compiled.fused ?? false,
    best: compiled.top[0]?.score ?? null,
    cover5: scored ? (covering.length > 0 ? 1 : 0) : null,
    match5: scored ? (covering.some((match) => match.passes) ? 1 : 0) : null,
  };
}

/** PMMC's figures over a compiled method's questions and its histories' compilations. */
export interface CompileSummary {
  readonly histories: number;
  readonly sessions: number;
  readonly bankSizePerHistory: number;
  readonly compileMsPerSession: number;
  readonly opportunitiesPerSession: number;
  /** Questions whose Doubter refused every plan, over questions planned. */
  readonly rejectedShare: number;
  /** Questions answered by the default search. */
  readonly fallbackRate: number;
  /** Questions whose best program's evidence was fused into the default search below the gate (`pmmc-fused`). */
  readonly fusedRate: number;
  /** Programs that returned evidence, over programs that passed the gate. */
  readonly programSuccessRate: number | null;
  readonly cover5: number | null;
  readonly match5: number | null;
  /** Median and 95th percentile of the best bank match's score: where the gate α_route cuts. */
  readonly bestScoreP50: number | null;
  readonly bestScoreP95: number | null;
}

export function summariseCompiled(
  scores: readonly QuestionScore[],
  figures: readonly {
    sessions: number;
    opportunities: number;
    questions: number;
    rejected: number;
    bankSize: number;
    ms: number;
  }[],
): CompileSummary {
  const compiled = scores.flatMap((score) => (score.compiled ? [score.compiled] : []));
  const sum = (pick: (figure: (typeof figures)[number]) => number) =>
    figures.reduce((total, figure) => total + pick(figure), 0);
  const sessions = sum((figure) => figure.sessions);
  const routed = compiled.filter((score) => score.routed);
  const mean = (values: (number | null)[]) => {
    const present = values.filter((value): value is number => value !== null);
    return present.length === 0 ? null : present.reduce((total, value) => total + value, 0) / present.length;
  };
  return {
    histories: figures.length,
    sessions,
    bankSizePerHistory: figures.length === 0 ? 0 : sum((figure) => figure.bankSize) / figures.length,
    compileMsPerSession: sessions === 0 ? 0 : sum((figure) => figure.ms) / sessions,
    opportunitiesPerSession: sessions === 0 ? 0 : sum((figure) => figure.opportunities) / sessions,
    rejectedShare:
      sum((figure) => figure.questions) === 0
        ? 0
        : sum((figure) => figure.rejected) / sum((figure) => figure.questions),
    fallbackRate: compiled.length === 0 ? 1 : compiled.filter((score) => !score.ran).length / compiled.length,
    fusedRate: compiled.length === 0 ? 0 : compiled.filter((score) => score.fused).length / compiled.length,
    programSuccessRate: routed.length === 0 ? null : routed.filter((score) => score.ran).length / routed.length,
    cover5: mean(compiled.map((score) => score.cover5)),
    match5: mean(compiled.map((score) => score.match5)),
    ...bestScores(compiled.flatMap((score) => (score.best === null ? [] : [score.best]))),
  };
}

function bestScores(best: readonly number[]): { bestScoreP50: number | null; bestScoreP95: number | null } {
  if (best.length === 0) return { bestScoreP50: null, bestScoreP95: null };
  return { bestScoreP50: percentile(best, 0.5), bestScoreP95: percentile(best, 0.95) };
}

function recall(gold: readonly string[], found: ReadonlySet<string | null>): number | null {
  if (gold.length === 0) return null;
  const distinct = [...new Set(gold)];
  return distinct.filter((id) => found.has(id)).length / distinct.length;
}

export interface MetricSummary {
  readonly questions: number;
  readonly emptyGold: number;
  readonly recallTurn: number | null;
  readonly recallSession: number | null;
  readonly recallImage: number | null;
  readonly routeHit: number | null;
  readonly supportRecall: number | null;
  readonly hitAt1: number | null;
  readonly hitAt5: number | null;
  readonly hitAt10: number | null;
  readonly mrr: number | null;
  /** Turn recall with the raw-node budget at 5, 10 and 20, and MRR@10 (absent in results from before they were measured). */
  readonly recallAt5?: number | null;
  readonly recallAt10?: number | null;
  readonly recallAt20?: number | null;
  readonly mrrAt10?: number | null;
  readonly imageHitRate: number | null;
  readonly textTokensMean: number;
  readonly imagesMean: number;
  readonly latencyP50Ms: number;
  readonly latencyP95Ms: number;
}

/** Macro-average over questions (each metric over the questions that have gold at its level). */
export function summarise(scores: readonly QuestionScore[]): MetricSummary {
  const scored = scores.filter((score) => !score.emptyGold);
  const mean = (values: (number | null)[]) => {
    const present = values.filter((value): value is number => value !== null);
    return present.length === 0 ? null : present.reduce((sum, value) => sum + value, 0) / present.length;
  };
  const latencies = scores.map((score) => score.latencyMs);
  return {
    questions: scores.length,
    emptyGold: scores.length - scored.length,
    recallTurn: mean(scored.map((score) => score.recall.turn)),
    recallSession: mean(scored.map((score) => score.recall.session)),
    recallImage: mean(scored.map((score) => score.recall.image)),
    routeHit: mean(scored.map((score) => score.routeHit)),
    supportRecall: mean(scored.map((score) => score.supportRecall)),
    hitAt1: mean(scored.map((score) => score.hitAt[1])),
    hitAt5: mean(scored.map((score) => score.hitAt[5])),
    hitAt10: mean(scored.map((score) => score.hitAt[10])),
    mrr: mean(scored.map((score) => score.mrr)),
    recallAt5: mean(scored.map((score) => score.atK?.recall[5] ?? null)),
    recallAt10: mean(scored.map((score) => score.atK?.recall[10] ?? null)),
    recallAt20: mean(scored.map((score) => score.atK?.recall[20] ?? null)),
    mrrAt10: mean(scored.map((score) => score.atK?.mrr10 ?? null)),
    imageHitRate: mean(scored.map((score) => score.imageHit)),
    textTokensMean: mean(scores.map((score) => score.textTokens)) ?? 0,
    imagesMean: mean(scores.map((score) => score.images)) ?? 0,
    latencyP50Ms: percentile(latencies, 0.5),
    latencyP95Ms: percentile(latencies, 0.95),
  };
}

/** Nearest-rank percentile; 0 for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number;
}

export function summariseByCategory(scores: readonly QuestionScore[]): Record<string, MetricSummary> {
  const groups = new Map<string, QuestionScore[]>();
  for (const score of scores) groups.set(score.category, [...(groups.get(score.category) ?? []), score]);
  return Object.fromEntries(
    [...groups.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([key, list]) => [key, summarise(list)]),
  );
}
