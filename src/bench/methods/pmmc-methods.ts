import type { CompileConfig } from "../../compile/compile-config.ts";
import type { CompileRoles } from "../../compile/roles.ts";
import { fixedPipelineRoles } from "../../compile/rule-roles.ts";
import type { EvidencePack } from "../../evidence/evidence-pack.ts";
import { compileWithout, searchThroughBank } from "../../memory.ts";
import type { BankProgram } from "../../store/bank-records.ts";
import type { BenchContext, BenchMethod, CompiledRetrieval } from "../method.ts";
import { fromPack } from "./search-method.ts";

interface Variant {
  /** Bank into the store through `Memory.compile` (the SDK's own path); else keep the bank in memory. */
  readonly stored: boolean;
  readonly config?: Partial<CompileConfig>;
  readonly roles?: CompileRoles;
}

/**
 * A PMMC method: after the replay and before any question, every session is compiled (query-blind)
 * into a bank; each question then runs `search({ mode: "compiled" })` at the shared budget. The
 * ablations keep their bank in memory so the methods of one run do not share one.
 */
function pmmcMethod(name: string, description: string, variant: Variant): BenchMethod {
  const banks = new WeakMap<BenchContext, readonly BankProgram[]>();
  return {
    name,
    description,
    async compile(context) {
      const { memory, scope } = context;
      const started = performance.now();
      const sessions = await memory.listSessions(scope);
      let opportunities = 0;
      let questions = 0;
      let rejected = 0;
      let bank: BankProgram[] = [];
      if (variant.stored) {
        for (const report of await memory.compile(scope)) {
          opportunities += report.opportunities;
          questions += report.questions;
          rejected += report.rejected;
        }
        bank = await memory.listPrograms(scope);
      } else {
        for (const session of sessions) {
          const { report, programs } = await memory[compileWithout](scope, session.key, variant);
          opportunities += report.opportunities;
          questions += report.questions;
          rejected += report.rejected;
          bank.push(...programs);
        }
      }
      banks.set(context, bank);
      return {
        sessions: sessions.length,
        opportunities,
        questions,
        rejected,
        bankSize: bank.length,
        ms: performance.now() - started,
      };
    },
    async retrieve(context, question, queryImage) {
      const bank = banks.get(context) ?? [];
      const image = queryImage ? { data: queryImage } : undefined;
      const query = { text: question.text, image };
      const options = { mode: "compiled" as const, budget: context.budget };
      const pack = variant.stored
        ? await context.memory.search(context.scope, query, options)
        : await context.memory[searchThroughBank](context.scope, query, options, bank, variant.config);
      return { ...fromPack(pack), compiled: compiledOf(pack, bank, context.memory.compileConfig.alphaRoute) };
    },
  };
}

function compiledOf(pack: EvidencePack, bank: readonly BankProgram[], alphaRoute: number): CompiledRetrieval {
  const trace = pack.compiled;
  const byId = new Map(bank.map((program) => [program.id, program]));
  return {
    routed: trace?.ran === true || (trace?.reason?.startsWith("the program returned no evidence") ?? false),
    fused: trace?.reason?.includes("; fused:") ?? false,
    ran: trace?.ran === true,
    reason: trace?.reason ?? null,
    top: (trace?.candidates ?? []).map((candidate) => ({
      score: candidate.score,
      passes: candidate.score >= alphaRoute,
      evidence: byId.get(candidate.id)?.evidence ?? [],
    })),
  };
}

/** PMMC and its ablations (issue 12): the full method, without the Doubter, with one fixed pipeline, without pixels. */
export const pmmcMethods: readonly BenchMethod[] = [
  pmmcMethod(
    "pmmc",
    "PMMC: programs compiled per session (rules), verified by the Doubter (r=2), routed at α=0.60, δ=0.05, else cairn",
    {
      stored: true,
    },
  ),
  pmmcMethod("pmmc-no-doubter", "PMMC ablation: the first valid plan is banked unexecuted (r=0, no verification)", {
    stored: false,
    config: { verify: false, repairRounds: 0 },
  }),
  pmmcMethod(
    "pmmc-fixed-pipeline",
    "PMMC ablation: one generic program (lexical+dense+image, expand, materialise) for every question",
    {
      stored: false,
      roles: fixedPipelineRoles,
    },
  ),
  pmmcMethod(
    "pmmc-fused",
    "PMMC, not the paper's gate: below α/δ a best program scoring ≥ 0.45 joins cairn's ranking (weight score/α)",
    {
      stored: false,
      config: { fuseBelowGate: true },
    },
  ),
  pmmcMethod(
    "pmmc-fused-any",
    "pmmc-fused without its floor: every below-gate best program is fused, however weak the match",
    {
      stored: false,
      config: { fuseBelowGate: true, fuseFloor: 0 },
    },
  ),
  pmmcMethod(
    "pmmc-no-raw-images",
    "PMMC ablation: no raw-image materialisation; images reach the reader as their text",
    {
      stored: false,
      config: { rawImages: false },
    },
  ),
];
