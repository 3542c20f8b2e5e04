import { randomBytes } from "node:crypto";
import { meanVector } from "../core/vectors.ts";
import { embedTexts } from "../models/model-calls.ts";
import type { Models } from "../models/provider.ts";
import type { VectorSpaces } from "../models/vector-spaces.ts";
import type { BankProgram } from "../store/bank-records.ts";
import type { IndexState } from "../store/index-records.ts";
import type { ScopedStore } from "../store/store.ts";
import type { CompileConfig } from "./compile-config.ts";
import { type CompileReport, compileSession } from "./compile-session.ts";
import type { ExecutionContext } from "./execute-program.ts";
import type { CompileRoles } from "./roles.ts";

/** What compiling into the bank needs from the memory: models, spaces, settings, roles and a text embedder. */
export interface CompilerContext {
  readonly models: Models;
  readonly spaces: VectorSpaces;
  readonly config: CompileConfig;
  readonly roles: CompileRoles;
  readonly rrfK: number;
  /** Raw nodes the Doubter checks in a program's output: the reader budget's raw nodes. */
  readonly window: number;
  readonly embedText: (tenant: string, text: string) => Promise<Float32Array | undefined>;
  readonly now: () => number;
}

export interface BankedReport extends CompileReport {
  /** Ids of the programs this compilation added to the bank. */
  readonly banked: readonly string[];
}

/** The executor's view of a scope; the index is read once per context (a compilation runs many programs). */
export function executionContext(
  scoped: ScopedStore,
  context: Pick<CompilerContext, "spaces" | "rrfK" | "embedText">,
): ExecutionContext {
  let index: Promise<IndexState> | undefined;
  return {
    store: scoped,
    spaces: {
      text: context.spaces.text.name,
      imageText: context.spaces.imageText.name,
      image: context.spaces.image?.name ?? null,
    },
    embedText: (text) => context.embedText(scoped.scope.tenant, text),
    index: () => {
      index ??= scoped.readIndex({ activeOnly: false });
      return index;
    },
    rrfK: context.rrfK,
  };
}

/**
 * Compiles one session and banks what the Doubter admitted, with each question's text vector and
 * the mean image vector of its evidence's images, in one audited store call (`bank.admit`).
 */
export async function compileIntoBank(
  scoped: ScopedStore,
  sessionKey: string,
  context: CompilerContext,
): Promise<BankedReport> {
  const { report, programs } = await compilePrograms(scoped, sessionKey, context);
  if (programs.length === 0) return { ...report, banked: [] };
  await scoped.admitPrograms(programs, {
    action: "bank.admit",
    subject: sessionKey,
    details: {
      roles: context.roles.id,
      programs: programs.map((program) => ({ id: program.id, kind: program.kind, evidence: program.evidence })),
      opportunities: report.opportunities,
      questions: report.questions,
      rejected: report.rejected,
      verified: context.config.verify,
    },
  });
  return { ...report, banked: programs.map((program) => program.id) };
}

/** Compiles one session into bank records without storing them (the harness keeps ablations' banks in memory). */
export async function compilePrograms(
  scoped: ScopedStore,
  sessionKey: string,
  context: CompilerContext,
): Promise<{ report: CompileReport; programs: BankProgram[] }> {
  const { config } = context;
  const report = await compileSession(scoped, sessionKey, {
    roles: context.roles,
    execution: executionContext(scoped, context),
    settings: {
      maxOpportunities: config.maxOpportunities,
      questionsPerOpportunity: config.questionsPerOpportunity,
      unit: config.unit,
      doubter: {
        repairRounds: config.repairRounds,
        verify: config.verify,
        window: context.window,
        rawImages: config.rawImages,
      },
    },
  });
  if (report.admitted.length === 0) return { report, programs: [] };
  const vectors = await embedTexts(
    context.models.text,
    report.admitted.map((program) => program.question),
  );
  const imageSpace = context.spaces.image?.name ?? null;
  const programs: BankProgram[] = [];
  for (const [index, compiled] of report.admitted.entries()) {
    const imageVector = imageSpace ? await evidenceImageVector(scoped, compiled.evidence, imageSpace) : null;
    programs.push({
      id: `prg_${randomBytes(12).toString("base64url")}`,
      question: compiled.question,
      kind: compiled.kind,
      program: { ...compiled.program },
      vector: vectors[index] ?? null,
      space: context.spaces.text.name,
      imageVector,
      imageSpace: imageVector ? imageSpace : null,
      evidence: compiled.evidence,
      sessions: compiled.sessions,
      coverFromMs: compiled.coverFromMs,
      coverToMs: compiled.coverToMs,
      verification: compiled.verification,
      createdMs: context.now(),
    });
  }
  return { report, programs };
}

/** The mean of the evidence images' vectors (the vectors the store keeps per image), if any. */
async function evidenceImageVector(
  scoped: ScopedStore,
  evidence: readonly string[],
  imageSpace: string,
): Promise<Float32Array | null> {
  const nodes = await scoped.readRawNodes({ ids: evidence });
  const hashes = [...new Set(nodes.flatMap((node) => node.images.flatMap((image) => image.hash ?? [])))];
  if (hashes.length === 0) return null;
  const known = await scoped.knownImages(hashes, imageSpace);
  return meanVector([...known.values()].flatMap((entry) => entry.vector ?? []));
}
