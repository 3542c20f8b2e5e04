import { CairnError } from "../core/errors.ts";
import type { BankProgram } from "../store/bank-records.ts";
import type { IndexEntry } from "../store/index-records.ts";
import type { ScopedStore } from "../store/store.ts";
import { type CompilerContext, executionContext } from "./compile-bank.ts";
import { executeProgram } from "./execute-program.ts";
import { ProgramError } from "./program-error.ts";
import { validateProgram } from "./validate-program.ts";

/** What one re-verification pass did: programs refreshed on the current state and programs retired, with why. */
export interface ReverifyReport {
  readonly checked: number;
  readonly refreshed: readonly string[];
  readonly retired: readonly { readonly id: string; readonly reason: string }[];
}

/** One re-verification as a program's verification trace keeps it (`verification.reverified`, newest last). */
export interface Reverification {
  readonly atMs: number;
  /** Superseded index entries the program rested on, and the entries that superseded them. */
  readonly superseded: readonly { readonly entry: string; readonly by: string }[];
  readonly nodes: number;
}

/**
 * Re-verifies the programs whose evidence later maintenance superseded (PMMC: a program is re-proved
 * or retired when what it points to changes). A program is due when one of its evidence raw nodes
 * sits in an index entry that an update superseded after the program was last verified (the
 * successor entry's creation time is later than the program's admission or last re-verification).
 * It is run again on the current state and kept only if, within the reader's window, it
 *
 *  - still returns raw nodes,
 *  - reaches the current state of every superseded entry: a raw node of its successor or a later one,
 *  - still carries an image if its evidence did.
 *
 * A kept program is refreshed (evidence: what it still returns of the old evidence plus the current
 * state's raw nodes; the re-verification appended to its trace; `bank.reverify`), the others are
 * retired (`bank.retire`, reason `superseded`, with each program's question and diagnosis). The
 * question and the program never change: a program that needs a different plan is compiled anew
 * when its session is compiled again.
 */
export async function reverifyBank(scoped: ScopedStore, context: CompilerContext): Promise<ReverifyReport> {
  const bank = await scoped.readBank();
  if (bank.length === 0) return { checked: 0, refreshed: [], retired: [] };
  const index = await scoped.readIndex({ activeOnly: false });
  const successorOf = new Map<string, IndexEntry>();
  const supersededHolding = new Map<string, IndexEntry[]>();
  for (const entry of index.entries.values()) {
    if (entry.predecessor) successorOf.set(entry.predecessor, entry);
    if (entry.status !== "superseded") continue;
    for (const pointer of entry.pointers)
      supersededHolding.set(pointer, [...(supersededHolding.get(pointer) ?? []), entry]);
  }
  const due = bank.flatMap((program) => {
    const since = lastVerifiedMs(program);
    const superseded = new Map<string, IndexEntry>();
    for (const node of program.evidence) {
      for (const entry of supersededHolding.get(node) ?? []) {
        const successor = successorOf.get(entry.id);
        if (successor && successor.createdMs > since) superseded.set(entry.id, successor);
      }
    }
    return superseded.size > 0 ? [{ program, superseded }] : [];
  });
  if (due.length === 0) return { checked: 0, refreshed: [], retired: [] };

  const execution = executionContext(scoped, context);
  const now = context.now();
  const refreshed: BankProgram[] = [];
  const retired: { id: string; question: string; reason: string }[] = [];
  for (const { program, superseded } of due) {
    const chains = [...superseded.values()].map((successor) => laterStates(successor, successorOf));
    const verdict = await rerun(program, chains, execution, context.window);
    if ("reason" in verdict) {
      retired.push({ id: program.id, question: program.question, reason: verdict.reason });
      continue;
    }
    const trace: Reverification = {
      atMs: now,
      superseded: [...superseded].map(([entry, by]) => ({ entry, by: by.id })),
      nodes: verdict.evidence.length,
    };
    const previous = Array.isArray(program.verification.reverified) ? program.verification.reverified : [];
    refreshed.push({
      ...program,
      evidence: verdict.evidence,
      coverToMs: Math.max(program.coverToMs, verdict.latestMs),
      verification: { ...program.verification, reverifiedMs: now, reverified: [...previous, trace] },
    });
  }
  if (refreshed.length > 0) {
    await scoped.refreshPrograms(refreshed, {
      action: "bank.reverify",
      subject: "consolidation",
      details: {
        reason: "evidence superseded",
        programs: refreshed.map((program) => ({ id: program.id, evidence: program.evidence })),
      },
    });
  }
  if (retired.length > 0) {
    await scoped.retirePrograms(
      retired.map((entry) => entry.id),
      { action: "bank.retire", subject: "consolidation", details: { reason: "superseded", programs: retired } },
    );
  }
  return {
    checked: due.length,
    refreshed: refreshed.map((program) => program.id),
    retired: retired.map(({ id, reason }) => ({ id, reason })),
  };
}

function lastVerifiedMs(program: BankProgram): number {
  const reverified = program.verification.reverifiedMs;
  return typeof reverified === "number" ? reverified : program.createdMs;
}

/** The raw nodes of an entry and of every entry that superseded it since: the current state of what it held. */
function laterStates(successor: IndexEntry, successorOf: ReadonlyMap<string, IndexEntry>): Set<string> {
  const nodes = new Set<string>();
  const seen = new Set<string>();
  for (let entry: IndexEntry | undefined = successor; entry && !seen.has(entry.id); entry = successorOf.get(entry.id)) {
    seen.add(entry.id);
    for (const pointer of entry.pointers) nodes.add(pointer);
  }
  return nodes;
}

async function rerun(
  program: BankProgram,
  chains: readonly Set<string>[],
  execution: ReturnType<typeof executionContext>,
  window: number,
): Promise<{ evidence: string[]; latestMs: number } | { reason: string }> {
  let result: Awaited<ReturnType<typeof executeProgram>>;
  try {
    result = await executeProgram(validateProgram(program.program, { entities: null }), execution);
  } catch (error) {
    if (error instanceof ProgramError) return { reason: `the program no longer validates: ${error.message}` };
    if (CairnError.is(error) && error.code !== "input") throw error;
    return { reason: `the program failed on the current state: ${error instanceof Error ? error.message : error}` };
  }
  const shown = result.nodes.slice(0, window);
  if (shown.length === 0) return { reason: "the program returns nothing on the current state" };
  if (!chains.every((chain) => shown.some((id) => chain.has(id))))
    return { reason: `the program does not reach the current state within the first ${window} raw nodes` };
  const hadImage = (await execution.store.readRawNodes({ ids: program.evidence })).some(
    (node) => node.images.length > 0,
  );
  const nodes = shown.flatMap((id) => result.read.get(id) ?? []);
  if (hadImage && !nodes.some((node) => node.images.length > 0))
    return { reason: "the program no longer returns an image its evidence carried" };
  const kept = new Set(program.evidence);
  const evidence = shown.filter((id) => kept.has(id) || chains.some((chain) => chain.has(id)));
  const latestMs = Math.max(...nodes.filter((node) => evidence.includes(node.id)).map((node) => Date.parse(node.time)));
  return { evidence, latestMs: Number.isFinite(latestMs) ? latestMs : program.coverToMs };
}
