import { CairnError } from "../core/errors.ts";
import type { RawNode } from "../store/records.ts";
import { type ExecutionContext, executeProgram, mentions } from "./execute-program.ts";
import type { CompilationUnit, Diagnosis, Opportunity } from "./opportunity.ts";
import { type Program, programLimits } from "./program.ts";
import { ProgramError } from "./program-error.ts";
import type { CompileRoles } from "./roles.ts";
import { validateProgram } from "./validate-program.ts";

export interface DoubterSettings {
  /** Repair rounds after the first plan (PMMC r; DESIGN §4: 2). 0 admits or rejects the first plan. */
  readonly repairRounds: number;
  /** Off: admit the first valid plan without executing it (the `pmmc-no-doubter` ablation). */
  readonly verify: boolean;
  /** Raw nodes of the program's output the checks look at: what the pack's budget would admit. */
  readonly window: number;
  /** Off: programs may not materialise images (the `pmmc-no-raw-images` ablation strips the step). */
  readonly rawImages: boolean;
}

/** One attempt as the verification trace keeps it. */
export interface Attempt {
  readonly attempt: number;
  readonly diagnosis: Diagnosis | null;
  readonly nodes: number;
  readonly ms: number;
}

export type Verdict =
  | {
      readonly admitted: true;
      readonly program: Program;
      readonly evidence: readonly string[];
      readonly attempts: readonly Attempt[];
    }
  | { readonly admitted: false; readonly attempts: readonly Attempt[] };

/**
 * Plans a question's program and proves it: the Doubter validates it, runs it on the history as it
 * stood at the unit's time, and checks it returns the opportunity's evidence, with the modalities
 * and entities required, within `window`. A failed check goes back to the Planner as a diagnosis,
 * at most `repairRounds` times; only a program that passes is admitted.
 */
export async function planAndVerify(
  question: string,
  opportunity: Opportunity,
  unit: CompilationUnit,
  roles: CompileRoles,
  execution: ExecutionContext,
  settings: DoubterSettings,
  /**
   * Checks already made for this opportunity, by program: the same program on the same opportunity
   * and history always gets the same verdict, so another wording of the question that plans the same
   * program is not executed again (the model-free Planner plans from the opportunity, not the wording).
   */
  proven: Map<string, Promise<Checked>> = new Map(),
): Promise<Verdict> {
  const attempts: Attempt[] = [];
  let previous: { program: unknown; diagnosis: Diagnosis } | undefined;
  for (let attempt = 0; attempt <= settings.repairRounds; attempt++) {
    const started = performance.now();
    let planned: unknown;
    try {
      planned = await roles.plan({ question, opportunity, unit, attempt, previous });
    } catch (error) {
      // A planner that fails (a provider error, an unparsable answer) gets no repair: nothing to diagnose.
      attempts.push({
        attempt,
        diagnosis: { problem: "failed", detail: messageOf(error) },
        nodes: 0,
        ms: performance.now() - started,
      });
      return { admitted: false, attempts };
    }
    const key = JSON.stringify(planned) ?? "";
    const pending = proven.get(key) ?? doubt(planned, opportunity, unit, execution, settings);
    proven.set(key, pending);
    const checked = await pending;
    attempts.push({
      attempt,
      diagnosis: checked.diagnosis,
      nodes: checked.nodes.length,
      ms: performance.now() - started,
    });
    if (!checked.diagnosis && checked.program) {
      return { admitted: true, program: checked.program, evidence: checked.evidence, attempts };
    }
    if (!checked.diagnosis) break;
    previous = { program: planned, diagnosis: checked.diagnosis };
  }
  return { admitted: false, attempts };
}

export interface Checked {
  readonly program?: Program;
  readonly diagnosis: Diagnosis | null;
  readonly nodes: readonly string[];
  readonly evidence: readonly string[];
}

async function doubt(
  planned: unknown,
  opportunity: Opportunity,
  unit: CompilationUnit,
  execution: ExecutionContext,
  settings: DoubterSettings,
): Promise<Checked> {
  let program: Program;
  try {
    program = withoutRawImages(validateProgram(planned, { entities: unit.entities }), settings.rawImages);
  } catch (error) {
    if (error instanceof ProgramError) {
      return {
        diagnosis: { problem: "invalid", detail: `${error.problem}: ${error.message}` },
        nodes: [],
        evidence: [],
      };
    }
    throw error;
  }
  // Without the Doubter the first valid plan is admitted on the opportunity's word.
  if (!settings.verify) return { program, diagnosis: null, nodes: [], evidence: opportunity.evidence };
  let nodes: readonly string[];
  let read: Awaited<ReturnType<typeof executeProgram>>["read"];
  try {
    ({ nodes, read } = await executeProgram(program, execution, { asOfMs: unit.asOfMs }));
  } catch (error) {
    if (CairnError.is(error) && error.code !== "input") throw error;
    return { diagnosis: { problem: "failed", detail: messageOf(error) }, nodes: [], evidence: [] };
  }
  const shown = nodes.slice(0, settings.window);
  const diagnosis = check(shown, read, opportunity, settings);
  return { program, diagnosis, nodes, evidence: opportunity.evidence.filter((id) => shown.includes(id)) };
}

function check(
  shown: readonly string[],
  read: ReadonlyMap<string, RawNode>,
  opportunity: Opportunity,
  settings: DoubterSettings,
): Diagnosis | null {
  if (shown.length === 0) return { problem: "empty", detail: "the program returned no raw nodes" };
  const missing = opportunity.evidence.filter((id) => !shown.includes(id));
  if (missing.length > 0) {
    return {
      problem: "missing-evidence",
      detail: `${missing.length} of ${opportunity.evidence.length} evidence raw nodes not within the first ${settings.window}`,
    };
  }
  const nodes = shown.flatMap((id) => read.get(id) ?? []);
  if (opportunity.modalities.includes("image") && !nodes.some((node) => node.images.length > 0)) {
    return { problem: "missing-modality", detail: "no returned raw node carries an image" };
  }
  for (const entity of opportunity.entities) {
    if (!nodes.some((node) => mentions(node, entity))) {
      return { problem: "missing-entity", detail: `no returned raw node mentions ${entity}` };
    }
  }
  return null;
}

/** The no-raw-images ablation: `materialise` steps pass their input through as plain nodes. */
function withoutRawImages(program: Program, rawImages: boolean): Program {
  if (rawImages) return program;
  return {
    ...program,
    steps: program.steps.map((step) =>
      step.op === "materialise" ? { id: step.id, op: "top-k", input: step.input, k: programLimits.maxFanOut } : step,
    ),
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
