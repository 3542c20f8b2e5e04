import type { ScopedStore } from "../store/store.ts";
import { findOpportunities } from "./analyse.ts";
import { buildCompilationUnit, type UnitBudget } from "./compilation-unit.ts";
import { type Attempt, type DoubterSettings, planAndVerify } from "./doubter.ts";
import type { ExecutionContext } from "./execute-program.ts";
import type { OpportunityKind } from "./opportunity.ts";
import type { Program } from "./program.ts";
import type { CompileRoles } from "./roles.ts";

export interface CompileSettings {
  /** Opportunities compiled per session (the unit's compile budget). */
  readonly maxOpportunities: number;
  /** Questions kept per opportunity (a model may propose more). */
  readonly questionsPerOpportunity: number;
  readonly unit: UnitBudget;
  readonly doubter: DoubterSettings;
}

/** A verified question–program pair, ready for the bank (the caller embeds the question and stores it). */
export interface CompiledProgram {
  readonly question: string;
  readonly kind: OpportunityKind;
  readonly program: Program;
  /** Raw nodes the verification returned as the opportunity's evidence: forgetting one retires the program. */
  readonly evidence: readonly string[];
  /** Session keys of the unit the program was compiled from. */
  readonly sessions: readonly string[];
  readonly coverFromMs: number;
  readonly coverToMs: number;
  readonly verification: {
    readonly roles: string;
    readonly verified: boolean;
    readonly asOfMs: number;
    readonly attempts: readonly Attempt[];
  };
}

export interface CompileReport {
  readonly session: string;
  readonly opportunities: number;
  readonly questions: number;
  readonly admitted: readonly CompiledProgram[];
  /** Questions whose program the Doubter refused after every repair, or whose planner failed. */
  readonly rejected: number;
  readonly warnings: readonly string[];
  readonly ms: number;
}

/** Characters of a predicted question kept (a model may ramble). */
const maxQuestionChars = 300;

/**
 * Compiles one session (PMMC at consolidation time): builds its budgeted unit, finds evidence
 * opportunities, asks the Questioner for questions and the Planner for programs, and keeps the
 * pairs the Doubter proves on the history as it stood. Reads only; the caller banks the result.
 */
export async function compileSession(
  store: ScopedStore,
  sessionKey: string,
  compile: { readonly roles: CompileRoles; readonly execution: ExecutionContext; readonly settings: CompileSettings },
): Promise<CompileReport> {
  const started = performance.now();
  const { roles, execution, settings } = compile;
  const unit = await buildCompilationUnit(store, sessionKey, settings.unit);
  const opportunities = findOpportunities(unit, settings.maxOpportunities);
  const admitted: CompiledProgram[] = [];
  const warnings: string[] = [];
  let questions = 0;
  let rejected = 0;
  const times = unit.nodes.map((node) => Date.parse(node.time));
  for (const opportunity of opportunities) {
    let asked: string[];
    try {
      asked = (await roles.ask(opportunity, unit))
        .map((question) => question.trim().slice(0, maxQuestionChars))
        .filter((question) => question.length > 0)
        .slice(0, settings.questionsPerOpportunity);
    } catch (error) {
      warnings.push(`questioner ${roles.id} failed on a ${opportunity.kind} opportunity: ${messageOf(error)}`);
      continue;
    }
    const proven = new Map();
    for (const question of asked) {
      questions++;
      const verdict = await planAndVerify(question, opportunity, unit, roles, execution, settings.doubter, proven);
      if (!verdict.admitted) {
        rejected++;
        continue;
      }
      admitted.push({
        question,
        kind: opportunity.kind,
        program: verdict.program,
        evidence: verdict.evidence,
        sessions: unit.sessions.map((session) => session.key),
        coverFromMs: Math.min(...times),
        coverToMs: Math.max(...times),
        verification: {
          roles: roles.id,
          verified: settings.doubter.verify,
          asOfMs: unit.asOfMs,
          attempts: verdict.attempts,
        },
      });
    }
  }
  return {
    session: sessionKey,
    opportunities: opportunities.length,
    questions,
    admitted,
    rejected,
    warnings,
    ms: performance.now() - started,
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
