import type { ChannelName } from "../channels/rrf.ts";
import { InputError } from "../core/errors.ts";
import { scopeKey } from "../core/scope.ts";
import { assemblePack } from "../evidence/assemble-pack.ts";
import type { CompiledTrace, EvidencePack } from "../evidence/evidence-pack.ts";
import { intakeImage } from "../ingest/image-intake.ts";
import { embedImages, embedTexts } from "../models/model-calls.ts";
import { type SearchContext, type SearchOptions, type SearchQuery, validateBudget } from "../route/search.ts";
import type { BankProgram } from "../store/bank-records.ts";
import type { ScopedStore } from "../store/store.ts";
import { calibrationFor } from "./bank-calibration.ts";
import { type BankCandidate, matchBank, type PreparedBank, prepareBank, programTerms, runnerUp } from "./bank-match.ts";
import { executionContext } from "./compile-bank.ts";
import type { CompileConfig } from "./compile-config.ts";
import { executeProgram } from "./execute-program.ts";
import type { Program } from "./program.ts";
import { ProgramError } from "./program-error.ts";
import { validateProgram } from "./validate-program.ts";

/** Bank matches a pack's trace lists (PMMC's Cover@5 and Match@5 read the top 5). */
const traceCandidates = 5;

/** What a compiled search needs: the read pipeline's context, the gate, and the default search to fall back to. */
export interface CompiledSearchContext {
  readonly reader: SearchContext;
  readonly config: CompileConfig;
  /** The default search (`cairn`) with these options: what answers when no program passes the gate. */
  readonly fallback: (options: SearchOptions) => Promise<EvidencePack>;
  /** Banks already made ready for matching, kept across searches (the Memory's own). */
  readonly prepared?: PreparedBanks;
}

/**
 * The last banks made ready for matching (`prepareBank`), by scope, each kept while the bank holds
 * the same programs. A program's question, program and vectors never change once banked (a refresh
 * changes only its evidence and verification), so the ids and vector spaces identify what matching
 * reads; a retirement or admission changes the ids and the bank is prepared again.
 */
export class PreparedBanks {
  readonly #banks = new Map<string, { readonly signature: string; readonly prepared: PreparedBank }>();
  readonly #capacity: number;

  constructor(capacity = 16) {
    this.#capacity = capacity;
  }

  get(scope: string, bank: readonly BankProgram[], candidates: () => BankCandidate[], spaces: string): PreparedBank {
    const signature = `${spaces}\n${bank.map((entry) => entry.id).join(" ")}`;
    const kept = this.#banks.get(scope);
    this.#banks.delete(scope);
    const prepared = kept?.signature === signature ? kept.prepared : prepareBank(candidates());
    this.#banks.set(scope, { signature, prepared });
    if (this.#banks.size > this.#capacity) this.#banks.delete(this.#banks.keys().next().value as string);
    return prepared;
  }
}

/**
 * PMMC at query time: match the query against the bank's questions (`matchBank`), run the best
 * program on the current state when its normalised score reaches α_route and leads the runner-up
 * by δ, and pack its raw nodes under the joint budget; otherwise — an empty bank, a weak or
 * ambiguous match, filters the programs do not take, a program that no longer validates or returns
 * nothing — the default search answers. Either way the pack's `compiled` trace says what happened.
 */
export async function compiledSearch(
  scoped: ScopedStore,
  query: string | SearchQuery,
  options: SearchOptions,
  context: CompiledSearchContext,
  /** Another bank than the stored one (the harness's ablations keep theirs in memory). */
  given?: readonly BankProgram[],
): Promise<EvidencePack> {
  const started = performance.now();
  const { reader, config } = context;
  const { text, image } = typeof query === "string" ? { text: query, image: undefined } : query;
  const queryText = text?.trim() ?? "";
  if (!queryText && !image) throw new InputError("query", "give query text, a query image, or both");
  if (queryText.length > reader.limits.maxTextChars)
    throw new InputError("query.text", `must be at most ${reader.limits.maxTextChars} characters`);
  const budget = validateBudget({ ...reader.budget, ...options.budget });
  const gate = { alphaRoute: config.alphaRoute, margin: config.margin };
  const fallback = async (reason: string, trace: Omit<CompiledTrace, "ran" | "reason" | "fallback" | "gate">) => {
    const pack = await context.fallback({ ...options, mode: "cairn" });
    const compiled: CompiledTrace = { ran: false, reason, fallback: "cairn", gate, ...trace };
    return { ...pack, mode: "compiled" as const, compiled };
  };

  const matchStarted = performance.now();
  const bank = given ?? (await scoped.readBank());
  const none = { program: null, steps: [], candidates: [], bankSize: bank.length, matchMs: 0, executeMs: 0 };
  if (bank.length === 0) return fallback("the question bank is empty", none);
  if (options.filters) return fallback("filters were given; banked programs take none", none);
  const embedStarted = performance.now();
  const embedText = textEmbedder(reader);
  const textVector = queryText ? await embedText(scoped.scope.tenant, queryText) : undefined;
  const queryImage = image ? await queryImageVector(scoped.scope.tenant, image, reader) : undefined;
  const imageVector = queryImage?.vector;
  const embedMs = performance.now() - embedStarted;
  const bankCandidates = () =>
    bank.map((entry) => ({
      id: entry.id,
      question: entry.question,
      terms: programTerms(entry.program),
      vector: entry.space === reader.spaces.text.name ? entry.vector : null,
      imageVector:
        entry.imageSpace !== null && entry.imageSpace === reader.spaces.image?.name ? entry.imageVector : null,
    }));
  const spaces = `${reader.spaces.text.name} ${reader.spaces.image?.name ?? ""}`;
  // A bank the harness holds in memory is matched as given; the stored one is prepared once per state.
  const matches = matchBank(
    { text: queryText, vector: textVector, imageVector },
    given || !context.prepared
      ? bankCandidates()
      : context.prepared.get(scopeKey(scoped.scope), bank, bankCandidates, spaces),
    reader.config.rrfK,
    calibrationFor(reader.spaces, config),
    config.paraphraseLevel,
  );
  const byId = new Map(bank.map((entry) => [entry.id, entry]));
  const best = matches[0];
  const second = runnerUp(matches, (id) => byId.get(id)?.evidence);
  const matchMs = performance.now() - matchStarted - embedMs;
  const banked = best ? byId.get(best.id) : undefined;
  if (!best || !banked)
    return fallback("no banked question shares a word or a meaning with the query", { ...none, matchMs });
  const margin = best.score - (second?.score ?? 0);
  const program = {
    id: banked.id,
    question: banked.question,
    kind: banked.kind,
    score: round(best.score),
    margin: round(margin),
  };
  const candidates = matches.slice(0, traceCandidates).map((match) => ({ id: match.id, score: round(match.score) }));
  const matched = { program, steps: [], candidates, bankSize: bank.length, matchMs, executeMs: 0 };
  const missed =
    best.score < config.alphaRoute
      ? `best match ${round(best.score)} is below α_route ${config.alphaRoute}`
      : margin < config.margin
        ? `best match leads the next on other evidence by ${round(margin)}, under δ ${config.margin}`
        : null;
  if (missed !== null) {
    if (!config.fuseBelowGate) return fallback(missed, matched);
    if (best.score < config.fuseFloor)
      return fallback(`${missed}; not fused: under the fusion floor ${config.fuseFloor}`, matched);
    return fuseBelowGate(scoped, banked, best.score, missed, {
      ...context,
      options,
      budget,
      matched,
      answerDefault: fallback,
    });
  }

  let valid: Program;
  try {
    // Entities were checked when the program was banked; a forget since then retired it if it lost evidence.
    valid = validateProgram(banked.program, { entities: null });
  } catch (error) {
    if (error instanceof ProgramError)
      return fallback(`the banked program no longer validates: ${error.message}`, matched);
    throw error;
  }
  const execution = await executeProgram(
    valid,
    executionContext(scoped, { spaces: reader.spaces, rrfK: reader.config.rrfK, embedText }),
  );
  const ran = { ...matched, steps: execution.trace, executeMs: execution.ms };
  if (execution.nodes.length === 0) return fallback("the program returned no evidence on the current state", ran);
  const fused = execution.nodes.map((id, index) => ({ id, score: 1 / (reader.config.rrfK + index + 1), channels: {} }));
  const packed = assemblePack(fused, execution.read, budget, {
    vision: (options.vision ?? true) && execution.materialised,
  });
  const warnings: string[] = [];
  const cuts = Object.entries(packed.budget.cut).filter(([, count]) => count > 0);
  if (cuts.length > 0) {
    warnings.push(
      `budget cut ${cuts.map(([dimension, count]) => `${count} by ${dimension}`).join(", ")} (see budget.cutItems)`,
    );
  }
  const totalMs = performance.now() - started;
  return {
    query: { text: queryText || null, image: queryImage ? { hash: queryImage.hash } : null },
    mode: "compiled",
    items: packed.items,
    budget: packed.budget,
    channelsUsed: channelsOf(valid),
    compiled: { ran: true, reason: null, fallback: null, gate, ...ran },
    // A program that passed the gate answers a banked question on evidence it verified: no relevance cut.
    noRelevantEvidence: packed.items.length === 0,
    warnings,
    timings: { embedMs, searchMs: totalMs - embedMs, totalMs },
  };
}

/**
 * Below the gate, when `compile.fuseBelowGate` is on (the `pmmc-fused` method; not the paper's gate):
 * the default search answers, and the best program's evidence on the current state joins its ranking
 * as one more reciprocal-rank list, weighted by how near the match came to the gate (score / α_route).
 * Both lists are re-packed under the same budget. Falls back plainly when the program cannot run.
 */
async function fuseBelowGate(
  scoped: ScopedStore,
  banked: BankProgram,
  score: number,
  missed: string,
  context: CompiledSearchContext & {
    readonly options: SearchOptions;
    readonly budget: ReturnType<typeof validateBudget>;
    readonly matched: Omit<CompiledTrace, "ran" | "reason" | "fallback" | "gate">;
    readonly answerDefault: (
      reason: string,
      trace: Omit<CompiledTrace, "ran" | "reason" | "fallback" | "gate">,
    ) => Promise<EvidencePack>;
  },
): Promise<EvidencePack> {
  const { reader, config, options, budget, matched } = context;
  let valid: Program;
  try {
    valid = validateProgram(banked.program, { entities: null });
  } catch (error) {
    if (error instanceof ProgramError)
      return context.answerDefault(`${missed}; its program no longer validates`, matched);
    throw error;
  }
  const pack = await context.answerDefault(missed, matched);
  const execution = await executeProgram(
    valid,
    executionContext(scoped, { spaces: reader.spaces, rrfK: reader.config.rrfK, embedText: textEmbedder(reader) }),
  );
  const ran = { ...matched, steps: execution.trace, executeMs: execution.ms };
  if (execution.nodes.length === 0) return { ...pack, compiled: { ...(pack.compiled as CompiledTrace), ...ran } };
  const k = reader.config.rrfK;
  const weight = Math.min(1, score / config.alphaRoute);
  const fused = new Map<string, { score: number; channels: EvidencePack["items"][number]["channels"] }>();
  // The default search's ranking: what it packed, then what it ranked but cut, except what the index-page
  // budget cut (fusion re-packs raw nodes only, so it must not bring back what that bound left out).
  const rankedCut = pack.budget.cutItems.filter((cut) => cut.dimension !== "pages").map((cut) => cut.rawNodeId);
  const defaultOrder = [...new Set([...pack.items.map((item) => item.rawNodeId), ...rankedCut])];
  const channels = new Map(pack.items.map((item) => [item.rawNodeId, item.channels]));
  defaultOrder.forEach((id, index) => {
    fused.set(id, { score: 1 / (k + index + 1), channels: channels.get(id) ?? {} });
  });
  execution.nodes.forEach((id, index) => {
    const current = fused.get(id) ?? { score: 0, channels: {} };
    fused.set(id, { ...current, score: current.score + weight / (k + index + 1) });
  });
  const ranked = [...fused.entries()]
    .map(([id, hit]) => ({ id, ...hit }))
    .sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
  const unread = ranked.map((hit) => hit.id).filter((id) => !execution.read.has(id));
  const nodes = new Map(execution.read);
  for (const node of unread.length > 0 ? await scoped.readRawNodes({ ids: unread }) : []) nodes.set(node.id, node);
  const packed = assemblePack(ranked, nodes, budget, { vision: options.vision ?? true });
  const relevance = new Map(pack.items.map((item) => [item.rawNodeId, item.relevance]));
  return {
    ...pack,
    items: packed.items.map((item) =>
      relevance.has(item.rawNodeId) ? { ...item, relevance: relevance.get(item.rawNodeId) ?? null } : item,
    ),
    budget: packed.budget,
    compiled: {
      ...(pack.compiled as CompiledTrace),
      ...ran,
      reason: `${missed}; fused: its program's evidence joined the default search's ranking at weight ${round(weight)}`,
    },
  };
}

/** Query texts embedded through the reader's cache (the fallback search finds them there too). */
export function textEmbedder(
  reader: SearchContext,
): (tenant: string, text: string) => Promise<Float32Array | undefined> {
  return (tenant, text) =>
    reader.queryEmbeddings.get(tenant, text, async (value) => (await embedTexts(reader.models.text, [value]))[0]);
}

/** The query image, checked as a search checks it, and its vector (cached under the key the read pipeline uses). */
async function queryImageVector(
  tenant: string,
  image: NonNullable<SearchQuery["image"]>,
  reader: SearchContext,
): Promise<{ hash: string; vector: Float32Array | undefined }> {
  const accepted = await intakeImage(image, "query.image", { limits: reader.limits });
  const embedder = reader.models.image;
  if (!embedder) return { hash: accepted.hash, vector: undefined };
  const vector = await reader.queryEmbeddings.get(
    tenant,
    `image:${embedder.id}:${accepted.hash}`,
    async () => (await embedImages(embedder, [accepted.data]))[0],
  );
  return { hash: accepted.hash, vector };
}

function channelsOf(program: Program): ChannelName[] {
  const channels = new Set<ChannelName>();
  for (const step of program.steps) {
    if (step.op === "lexical") channels.add(step.field === "imageText" ? "imageText" : "bm25");
    if (step.op === "dense") channels.add("dense");
    if (step.op === "image-match") channels.add(step.image ? "imageVector" : "image");
  }
  return [...channels];
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
