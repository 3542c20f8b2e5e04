import type { BankProgram } from "../store/bank-records.ts";
import type { AuditEvent } from "../store/records.ts";

/** A banked program as a person browses it: no vectors, the DAG as its steps, active by construction. */
export interface BankEntryView {
  readonly id: string;
  readonly status: "active";
  readonly question: string;
  readonly kind: string;
  /** The program's steps (each with its operator and inputs) and the step it outputs. */
  readonly program: Readonly<Record<string, unknown>>;
  readonly evidence: readonly string[];
  readonly sessions: readonly string[];
  readonly coverFrom: string;
  readonly coverTo: string;
  readonly verification: Readonly<Record<string, unknown>>;
  readonly created: string;
}

/** A program that left the bank, as the audit log recorded it (retired programs are deleted, not kept). */
export interface RetiredView {
  readonly id: string;
  readonly status: "retired";
  /** The question, when the retiring event named it (recompilation and re-verification do; a forget only counts). */
  readonly question: string | null;
  readonly reason: string;
  /** Why this program in particular, when the event says (a re-verification's diagnosis). */
  readonly detail: string | null;
  readonly time: string;
  readonly event: string;
}

export interface BankView {
  readonly programs: readonly BankEntryView[];
  readonly retired: readonly RetiredView[];
}

/** Retirements whose details name the programs: `bank.retire` events with `programs: [{ id, question }]`. */
export function bankView(programs: readonly BankProgram[], audit: readonly AuditEvent[]): BankView {
  return {
    programs: programs.map((program) => ({
      id: program.id,
      status: "active",
      question: program.question,
      kind: program.kind,
      program: program.program,
      evidence: program.evidence,
      sessions: program.sessions,
      coverFrom: new Date(program.coverFromMs).toISOString(),
      coverTo: new Date(program.coverToMs).toISOString(),
      verification: program.verification,
      created: new Date(program.createdMs).toISOString(),
    })),
    retired: audit
      .filter((event) => event.action === "bank.retire")
      .flatMap((event) => {
        const reason = typeof event.details.reason === "string" ? event.details.reason : "retired";
        const named = Array.isArray(event.details.programs) ? event.details.programs : [];
        return named.flatMap((entry: unknown) => {
          if (typeof entry !== "object" || entry === null || typeof (entry as { id?: unknown }).id !== "string")
            return [];
          const { id, question, reason: detail } = entry as { id: string; question?: unknown; reason?: unknown };
          return [
            {
              id,
              status: "retired" as const,
              question: typeof question === "string" ? question : null,
              reason,
              detail: typeof detail === "string" ? detail : null,
              time: event.time,
              event: event.id,
            },
          ];
        });
      }),
  };
}
