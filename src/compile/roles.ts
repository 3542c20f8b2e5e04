import type { CompilationUnit, Diagnosis, Opportunity } from "./opportunity.ts";

/** What the Planner is asked: a question, its opportunity, and (on a repair) its last program and why it failed. */
export interface PlanRequest {
  readonly question: string;
  readonly opportunity: Opportunity;
  readonly unit: CompilationUnit;
  /** 0 for the first plan, then 1..r for repairs. */
  readonly attempt: number;
  readonly previous?: { readonly program: unknown; readonly diagnosis: Diagnosis };
}

/**
 * The two model roles of compilation (PMMC Q_θ and P_φ) behind one seam: the model-free rules
 * (`rule-roles.ts`, the default, offline) and an LLM through the chat model (`chat-roles.ts`).
 * The Doubter is not a role: it is the executor plus checks (`doubter.ts`), the same for both.
 * Whatever a role answers is untrusted: programs pass the validator, questions are trimmed and bounded.
 */
export interface CompileRoles {
  readonly id: string;
  /** Questioner: questions a user may later ask that this opportunity's evidence answers. */
  ask(opportunity: Opportunity, unit: CompilationUnit): Promise<string[]>;
  /** Planner: program JSON for the question (validated by the caller). */
  plan(request: PlanRequest): Promise<unknown>;
}
