import { mkdtempSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { defaultCompileConfig } from "../compile/compile-config.ts";
import type { Budget } from "../evidence/budget.ts";
import type { MemoryOptions } from "../memory.ts";
import type { Models } from "../models/provider.ts";
import type { SearchConfig } from "../route/search-config.ts";
import { ablationOptions } from "./ablations.ts";
import {
  type AnswerAssessment,
  type AnswerJudge,
  type AnswerSummary,
  summariseAnswers,
} from "./answer/answer-judge.ts";
import { type BenchStore, sqliteBenchStore } from "./bench-store.ts";
import type { BenchDataset, BenchQuestion } from "./dataset.ts";
import type { BenchContext, BenchMethod, CompileFigures, IndexFigures } from "./method.ts";
import {
  type CompileSummary,
  type MetricSummary,
  type QuestionScore,
  type RankDepth,
  rankDepths,
  scoreAtK,
  scoreQuestion,
  summarise,
  summariseByCategory,
  summariseCompiled,
} from "./metrics.ts";
import { replayHistory } from "./replay.ts";

export interface BenchResult {
  readonly dataset: string;
  readonly method: string;
  readonly description: string;
  readonly config: {
    readonly profile: string;
    /** The backend the histories were replayed into; absent in results from before there was a choice (SQLite). */
    readonly store?: { readonly name: string; readonly description: string };
    readonly models: { readonly text: string; readonly image: string | null; readonly imageReaders: readonly string[] };
    readonly budget: Budget;
    readonly search: Pick<SearchConfig, "rrfK" | "perChannel">;
    /** The compiled methods' gate, when one ran (PMMC α_route and δ). */
    readonly gate?: { readonly alphaRoute: number; readonly margin: number };
    readonly limit: number | null;
    /** Levers switched off (`--ablate`); absent or empty for the engine's defaults. */
    readonly ablate?: readonly string[];
    readonly date: string;
    readonly machine: { readonly cpu: string; readonly cores: number; readonly node: string };
  };
  readonly ingest: {
    readonly histories: number;
    readonly sessions: number;
    readonly rawNodes: number;
    readonly ms: number;
  };
  readonly peakRssMb: number;
  readonly summary: MetricSummary;
  readonly byCategory: Readonly<Record<string, MetricSummary>>;
  readonly notes: readonly string[];
  readonly warnings: readonly string[];
  readonly questions: readonly QuestionScore[];
  /** For methods that read through an active index: its figures, summed over histories (episodes). */
  readonly maintenance?: MaintenanceSummary;
  /** For compiled methods (PMMC): compile cost, bank size, fallback rate, program success, Cover@5, Match@5. */
  readonly compile?: CompileSummary;
  /** Present when an answerer and judge were configured (`--answer`). */
  readonly answers?: {
    readonly overall: AnswerSummary;
    readonly byCategory: Readonly<Record<string, AnswerSummary>>;
    readonly assessments: readonly AnswerAssessment[];
  };
}

export interface MaintenanceSummary {
  readonly policy: string;
  readonly episodes: number;
  readonly utilisationMean: number;
  readonly activeEntriesMean: number;
  readonly indexTokensMean: number;
  readonly overflowRepairsPerEpisode: number;
  readonly pointersPerEpisode: number;
  readonly rawNodesPerEpisode: number;
  /** Episodes whose index points at every raw node (C3M: pointers must equal raw nodes). */
  readonly episodesWithAllPointers: number;
  readonly violations: number;
  readonly actions: Readonly<Record<string, number>>;
}

export interface RunBenchOptions {
  readonly dataset: BenchDataset;
  readonly methods: readonly BenchMethod[];
  readonly models: Models;
  readonly budget: Budget;
  readonly search: SearchConfig;
  /** Compilation settings of the replayed memories (the compiled methods' gate; DESIGN §4 defaults otherwise). */
  readonly compile?: MemoryOptions["compile"];
  readonly limit?: number;
  /** Called once per unit of work: a session ingested or a question answered by one method. */
  readonly onProgress?: (event: { readonly total: number; readonly label: string }) => void;
  readonly workDir?: string;
  /** Answers from each pack and judges the answer (needs an OpenAI-compatible endpoint). */
  readonly answerJudge?: AnswerJudge;
  /** The backend each history is replayed into (default: SQLite). */
  readonly store?: BenchStore;
  /**
   * Also read every question at raw-node budgets 5, 10 and 20 for recall@k and MRR@10 (default true): three
   * more searches per question and method, each a pack the method fills itself under that budget.
   */
  readonly atK?: boolean;
  /** Levers switched off for this run (see ablations.ts); recorded in each result's config. */
  readonly ablate?: readonly string[];
}

/**
 * Replays each history once, then asks every question of every method against that same
 * memory, so methods share raw nodes, embedders and the budget. Questions are read only after
 * the last session of their history is written.
 */
export async function runBench(options: RunBenchOptions): Promise<BenchResult[]> {
  const { dataset, methods } = options;
  const dir = options.workDir ?? mkdtempSync(join(tmpdir(), `cairn-bench-${dataset.name}-`));
  const scores = new Map(methods.map((method) => [method.name, [] as QuestionScore[]]));
  const warnings = new Map(methods.map((method) => [method.name, [] as string[]]));
  const assessments = new Map(methods.map((method) => [method.name, [] as AnswerAssessment[]]));
  const indexFigures = new Map(methods.map((method) => [method.name, [] as IndexFigures[]]));
  const compileFigures = new Map(methods.map((method) => [method.name, [] as CompileFigures[]]));
  const total = dataset.histories.reduce(
    (sum, history) => sum + history.sessions.length + history.questions.length * methods.length,
    0,
  );
  const tick = (label: string) => options.onProgress?.({ total, label });
  const ingest = { histories: 0, sessions: 0, rawNodes: 0, ms: 0 };
  try {
    for (const history of dataset.histories) {
      const replayed = await replayHistory(
        { id: history.id, sessions: history.sessions, baseDir: history.baseDir },
        {
          models: options.models,
          dir,
          store: options.store,
          compile: options.compile,
          memory: ablationOptions(options.ablate ?? []),
          onSession: () => tick(`${history.id}: ingest`),
        },
      );
      ingest.histories++;
      ingest.sessions += history.sessions.length;
      ingest.rawNodes += replayed.timeline.length;
      ingest.ms += replayed.ingestMs;
      try {
        const context = { ...replayed, budget: options.budget };
        // Compilation, like the index, sees the sessions alone: it runs before any question is read.
        for (const method of methods) {
          if (method.compile) compileFigures.get(method.name)?.push(await method.compile(context));
        }
        // The index is built from the sessions alone (query-blind); its figures come before any question.
        for (const method of methods) {
          if (method.indexFigures) indexFigures.get(method.name)?.push(await method.indexFigures(context));
        }
        for (const question of history.questions) {
          const queryImage = question.imagePath ? new Uint8Array(await readFile(question.imagePath)) : null;
          for (const method of methods) {
            const started = performance.now();
            const retrieval = await method.retrieve(context, question, queryImage);
            const latency = performance.now() - started - retrieval.embedMs;
            const score = scoreQuestion(question, retrieval, replayed.idsOf, latency, options.budget.rawNodes);
            const atK =
              options.atK === false
                ? undefined
                : scoreAtK(question, await packsAtK(method, context, question, queryImage), replayed.idsOf);
            scores.get(method.name)?.push(atK ? { ...score, atK } : score);
            if (retrieval.warnings.length > 0) warnings.get(method.name)?.push(...retrieval.warnings);
            if (options.answerJudge) {
              const assessment = await options.answerJudge.assess(
                context,
                question,
                retrieval,
                queryImage ?? undefined,
              );
              assessments.get(method.name)?.push(assessment);
            }
            tick(`${history.id}: ${method.name}`);
          }
        }
      } finally {
        await replayed.memory.close();
      }
    }
  } finally {
    if (!options.workDir) rmSync(dir, { recursive: true, force: true });
  }
  const peakRssMb = process.resourceUsage().maxRSS / 1024;
  return methods.map((method) => {
    const questions = scores.get(method.name) ?? [];
    return {
      dataset: dataset.name,
      method: method.name,
      description: method.description,
      config: {
        profile: options.models.profile,
        store: {
          name: (options.store ?? sqliteBenchStore).name,
          description: (options.store ?? sqliteBenchStore).description,
        },
        models: {
          text: options.models.text.id,
          image: options.models.image?.id ?? null,
          imageReaders: options.models.imageReaders.map((reader) => reader.id),
        },
        budget: options.budget,
        search: options.search,
        ...(method.compile
          ? {
              gate: {
                alphaRoute: options.compile?.alphaRoute ?? defaultCompileConfig.alphaRoute,
                margin: options.compile?.margin ?? defaultCompileConfig.margin,
              },
            }
          : {}),
        limit: options.limit ?? null,
        ablate: options.ablate ?? [],
        date: new Date().toISOString(),
        machine: { cpu: cpus()[0]?.model ?? "unknown", cores: cpus().length, node: process.version },
      },
      ingest,
      peakRssMb,
      summary: summarise(questions),
      byCategory: summariseByCategory(questions),
      notes: dataset.notes,
      warnings: summariseWarnings(warnings.get(method.name) ?? []),
      questions,
      ...summariseIndex(indexFigures.get(method.name) ?? []),
      ...(method.compile ? { compile: summariseCompiled(questions, compileFigures.get(method.name) ?? []) } : {}),
      ...(options.answerJudge ? { answers: answerSummary(assessments.get(method.name) ?? []) } : {}),
    };
  });
}

/** The method's packs with the raw-node budget at each of `rankDepths` (other dimensions as configured). */
async function packsAtK(
  method: BenchMethod,
  context: BenchContext,
  question: BenchQuestion,
  queryImage: Uint8Array | null,
): Promise<Record<RankDepth, readonly string[]>> {
  const packs: Partial<Record<RankDepth, readonly string[]>> = {};
  for (const k of rankDepths) {
    const retrieval = await method.retrieve(
      { ...context, budget: { ...context.budget, rawNodes: k } },
      question,
      queryImage,
    );
    packs[k] = retrieval.selected;
  }
  return packs as Record<RankDepth, readonly string[]>;
}

function summariseIndex(list: readonly IndexFigures[]): { maintenance?: MaintenanceSummary } {
  const first = list[0];
  if (!first) return {};
  const mean = (pick: (figures: IndexFigures) => number) =>
    Math.round((list.reduce((sum, figures) => sum + pick(figures), 0) / list.length) * 1000) / 1000;
  const actions: Record<string, number> = {};
  for (const figures of list) {
    for (const [action, count] of Object.entries(figures.actions)) actions[action] = (actions[action] ?? 0) + count;
  }
  return {
    maintenance: {
      policy: first.policy,
      episodes: list.length,
      utilisationMean: mean((figures) => figures.utilisation),
      activeEntriesMean: mean((figures) => figures.activeEntries),
      indexTokensMean: mean((figures) => figures.indexTokens),
      overflowRepairsPerEpisode: mean((figures) => figures.overflowRepairs),
      pointersPerEpisode: mean((figures) => figures.pointers),
      rawNodesPerEpisode: mean((figures) => figures.rawNodes),
      episodesWithAllPointers: list.filter((figures) => figures.pointers === figures.rawNodes).length,
      violations: list.reduce((sum, figures) => sum + figures.violations, 0),
      actions,
    },
  };
}

function answerSummary(list: AnswerAssessment[]): NonNullable<BenchResult["answers"]> {
  return { ...summariseAnswers(list), assessments: list };
}

/** Warnings repeat per question; report each distinct kind once with its count. */
function summariseWarnings(warnings: readonly string[]): string[] {
  const counts = new Map<string, number>();
  for (const warning of warnings) {
    const kind = warning.replace(/\d+/g, "N");
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return [...counts.entries()].map(([kind, count]) => `${kind} (×${count})`);
}
