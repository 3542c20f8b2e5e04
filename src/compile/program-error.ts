import { InputError } from "../core/errors.ts";

/** What is wrong with a program, as a planner (rules or a model) gets it back to repair. */
export type ProgramProblem =
  | "malformed"
  | "unknown-operator"
  | "unknown-step"
  | "duplicate-step"
  | "cycle"
  | "type-mismatch"
  | "unknown-entity"
  | "unbounded-fan-out";

/**
 * A program the validator refuses. An `InputError` (a program from a model or a caller is untrusted
 * input), with `problem` saying which rule it broke and `step` the step that broke it.
 *
 * @example
 * try { validateProgram(json, { entities }) } catch (error) { if (error instanceof ProgramError) error.problem }
 */
export class ProgramError extends InputError {
  readonly problem: ProgramProblem;
  readonly step: string | null;
  constructor(problem: ProgramProblem, step: string | null, reason: string) {
    super(step === null ? "program" : `program.steps.${step}`, reason);
    this.problem = problem;
    this.step = step;
  }
}
