/**
 * Retrieval programs (PMMC): a typed, acyclic dataflow over a frozen set of operators. A program
 * is data (JSON), never code: the validator (`validate-program.ts`) is the only way in, and the
 * executor (`execute-program.ts`) runs it the same way at compile time and at query time.
 *
 * Every step yields a ranked list of raw nodes (`nodes`), except `materialise`, which marks the
 * list as evidence whose original images the reader receives as pixels (`evidence`). A program's
 * output is one step; its value is what the evidence pack is packed from under the joint budget.
 */

/** The frozen operator set. Adding one is a decision (docs/decisions/010-pmmc.md), not a planner's choice. */
export const operators = Object.freeze([
  "lexical",
  "dense",
  "image-match",
  "filter",
  "expand",
  "temporal-walk",
  "latest",
  "materialise",
  "union",
  "intersect",
  "top-k",
] as const);

export type Operator = (typeof operators)[number];

/** What a step yields: a ranked raw-node list, or that list marked as evidence with its pixels. */
export type ValueType = "nodes" | "evidence";

/** BM25 over raw-node text, or over image-derived text (captions, OCR). */
export interface LexicalStep {
  readonly id: string;
  readonly op: "lexical";
  readonly query: string;
  readonly field?: "text" | "imageText";
  readonly limit: number;
}

/** Cosine over raw-node text vectors. */
export interface DenseStep {
  readonly id: string;
  readonly op: "dense";
  readonly query: string;
  readonly limit: number;
}

/** The image channel: by text (image-derived text, lexical and dense) or by a stored image's pixels (image vectors). */
export interface ImageMatchStep {
  readonly id: string;
  readonly op: "image-match";
  readonly text?: string;
  /** SHA-256 of an image the scope holds. */
  readonly image?: string;
  readonly limit: number;
}

/** Keeps the input's raw nodes that satisfy every condition given. */
export interface FilterStep {
  readonly id: string;
  readonly op: "filter";
  readonly input: string;
  /** Session keys. */
  readonly sessions?: readonly string[];
  readonly fromMs?: number;
  readonly toMs?: number;
  readonly speakers?: readonly string[];
  /** An entity the scope knows (lower case): the raw node's text or image text mentions it. */
  readonly entity?: string;
}

/** Adds each raw node's neighbours within `window` turns of its session, after it. */
export interface ExpandStep {
  readonly id: string;
  readonly op: "expand";
  readonly input: string;
  readonly window: number;
}

/** Follows the active index's update links from the entries holding the input: earlier or later states. */
export interface TemporalWalkStep {
  readonly id: string;
  readonly op: "temporal-walk";
  readonly input: string;
  readonly direction: "earlier" | "later" | "both";
  readonly depth: number;
}

/** The most recent `keep` raw nodes of the input (optionally those mentioning an entity), newest first. */
export interface LatestStep {
  readonly id: string;
  readonly op: "latest";
  readonly input: string;
  readonly keep: number;
  readonly entity?: string;
}

/** Marks the input as evidence whose original images are delivered as pixels. */
export interface MaterialiseStep {
  readonly id: string;
  readonly op: "materialise";
  readonly input: string;
}

/** Reciprocal-rank fusion of the inputs. */
export interface UnionStep {
  readonly id: string;
  readonly op: "union";
  readonly inputs: readonly string[];
}

/** Raw nodes in every input, in the first input's order. */
export interface IntersectStep {
  readonly id: string;
  readonly op: "intersect";
  readonly inputs: readonly string[];
}

export interface TopKStep {
  readonly id: string;
  readonly op: "top-k";
  readonly input: string;
  readonly k: number;
}

export type Step =
  | LexicalStep
  | DenseStep
  | ImageMatchStep
  | FilterStep
  | ExpandStep
  | TemporalWalkStep
  | LatestStep
  | MaterialiseStep
  | UnionStep
  | IntersectStep
  | TopKStep;

export interface Program {
  readonly version: 1;
  readonly steps: readonly Step[];
  /** The step whose value the program returns. */
  readonly output: string;
}

/** Bounds every program obeys: a planner cannot ask for unbounded work. */
export const programLimits = Object.freeze({
  /** Steps in one program. */
  maxSteps: 16,
  /** Raw nodes a search or top-k step may ask for. */
  maxFanOut: 40,
  /** Inputs of one union or intersect. */
  maxInputs: 6,
  /** Turns either side an expansion reaches. */
  maxWindow: 3,
  /** Update links one walk follows. */
  maxDepth: 4,
  /** Characters of a query string. */
  maxQueryChars: 500,
});

/** The steps a step reads from. */
export function inputsOf(step: Step): readonly string[] {
  if ("inputs" in step) return step.inputs;
  if ("input" in step) return [step.input];
  return [];
}

/** What each operator yields. */
export function outputType(op: Operator): ValueType {
  return op === "materialise" ? "evidence" : "nodes";
}

/** Whether the program hands the reader original pixels (it ends in, or passes through, `materialise`). */
export function materialises(program: Program): boolean {
  return program.steps.some((step) => step.op === "materialise");
}
