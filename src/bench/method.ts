import type { Scope } from "../core/scope.ts";
import type { Budget } from "../evidence/budget.ts";
import type { Memory } from "../memory.ts";
import type { RawNode } from "../store/records.ts";
import type { BenchQuestion } from "./dataset.ts";

/** What a method may use: the replayed memory (shared by every method) and the shared budget. */
export interface BenchContext {
  readonly memory: Memory;
  readonly scope: Scope;
  readonly budget: Budget;
  /** The history's raw nodes in time order, for methods that read by position (full context, recency). */
  readonly timeline: readonly RawNode[];
  readonly nodes: ReadonlyMap<string, RawNode>;
}

/** One question's retrieval, in raw-node ids. */
export interface Retrieval {
  /** The evidence pack, best first. */
  readonly selected: readonly string[];
  /** What reached the candidate set before budget selection (selected ∪ cut), best first. */
  readonly candidates: readonly string[];
  /**
   * Whether the candidates came through routing over an active index (C3M's C_q, joined by the direct
   * channels' hits in `cairn` mode). Route-Hit and Support Recall are routing diagnostics: they are
   * reported for these methods only, since a method that does not route has no routed candidate set.
   */
  readonly routed?: boolean;
  /** Raw nodes whose images reached the reader (as pixels or as text). */
  readonly imagesDelivered: readonly string[];
  readonly textTokens: number;
  readonly images: number;
  readonly warnings: readonly string[];
  /** Time spent embedding the query; latency is reported without it (the cache would favour later methods). */
  readonly embedMs: number;
  /** For compiled methods (PMMC): whether a program ran, and the best bank matches with their evidence. */
  readonly compiled?: CompiledRetrieval;
}

export interface CompiledRetrieval {
  /** A program passed the gate (α_route, δ). */
  readonly routed: boolean;
  /** Below the gate, its program's evidence was fused into the default search's ranking (`pmmc-fused`). */
  readonly fused?: boolean;
  /** It ran and returned evidence (else the default search answered). */
  readonly ran: boolean;
  readonly reason: string | null;
  /** The best bank matches, best first (at most 5): their scores, whether each passes α_route, their evidence. */
  readonly top: readonly { readonly score: number; readonly passes: boolean; readonly evidence: readonly string[] }[];
}

/** What compiling one history's sessions cost and produced (PMMC). */
export interface CompileFigures {
  readonly sessions: number;
  readonly opportunities: number;
  readonly questions: number;
  readonly rejected: number;
  readonly bankSize: number;
  readonly ms: number;
}

/**
 * A retrieval method the harness compares. Methods share raw nodes, embedders and the budget;
 * later mechanisms (maintenance, routing, compilation) register here without touching the harness.
 */
export interface BenchMethod {
  readonly name: string;
  readonly description: string;
  retrieve(context: BenchContext, question: BenchQuestion, queryImage: Uint8Array | null): Promise<Retrieval>;
  /** For methods that read through an active index: what maintenance left in it for this history. */
  indexFigures?(context: BenchContext): Promise<IndexFigures>;
  /** For compiled methods: compile the replayed history (before any question is read; query-blind). */
  compile?(context: BenchContext): Promise<CompileFigures>;
}

/** One history's active index after replay, as C3M's resource audit reports it. */
export interface IndexFigures {
  readonly policy: string;
  /** Largest used/bound ratio over entries, pages, tokens and bytes (above 1 for an unbounded index). */
  readonly utilisation: number;
  readonly activeEntries: number;
  readonly pages: number;
  readonly indexTokens: number;
  readonly indexBytes: number;
  readonly overflowRepairs: number;
  /** Distinct raw nodes reachable from the index (C3M "Raw-Node pointers"). */
  readonly pointers: number;
  readonly rawNodes: number;
  /** Invariant violations `checkIndex` found (provenance, audit, bounds, structure). */
  readonly violations: number;
  readonly actions: Readonly<Record<string, number>>;
}
