import type { Ranked } from "../core/ranked.ts";
import type { IndexEntry, IndexState } from "../store/index-records.ts";
import type { RawNode, SearchFilters } from "../store/records.ts";
import type { ScopedStore } from "../store/store.ts";
import { type Program, programLimits, type Step } from "./program.ts";

/** What the executor reads through: the scope's store, vector spaces, a text embedder and the index. */
export interface ExecutionContext {
  readonly store: ScopedStore;
  readonly spaces: { readonly text: string; readonly imageText: string; readonly image: string | null };
  /** A query string's text vector (undefined when the profile has none). */
  readonly embedText: (text: string) => Promise<Float32Array | undefined>;
  /** Every entry of the active index (any status), for temporal walks. */
  readonly index: () => Promise<IndexState>;
  readonly rrfK: number;
}

export interface ExecutionOptions {
  /**
   * Run on the history as it stood at this time: every search is filtered to raw nodes at or
   * before it, and so is every step's value. The Doubter runs programs this way; queries run on now.
   */
  readonly asOfMs?: number;
}

export interface StepTrace {
  readonly id: string;
  readonly op: Step["op"];
  readonly nodes: number;
}

export interface Execution {
  /** The output's raw-node ids, best first. */
  readonly nodes: readonly string[];
  /** The raw nodes themselves (every id in `nodes`). */
  readonly read: ReadonlyMap<string, RawNode>;
  /** Whether the output is materialised evidence (its images go to the reader as pixels). */
  readonly materialised: boolean;
  readonly trace: readonly StepTrace[];
  readonly ms: number;
}

/** Raw nodes a step may hold: the largest fan-out times the widest union, so no step is unbounded. */
const maxStepNodes = programLimits.maxFanOut * 2;

/**
 * Runs a validated program. Steps run in the program's (topological) order; each yields a ranked
 * raw-node list capped at `maxStepNodes`. The same function serves compile time (with `asOfMs`)
 * and query time: a banked program always reads the current state, never a stored answer.
 */
export async function executeProgram(
  program: Program,
  context: ExecutionContext,
  options: ExecutionOptions = {},
): Promise<Execution> {
  const started = performance.now();
  const run = new Run(context, options.asOfMs);
  const values = new Map<string, readonly string[]>();
  const trace: StepTrace[] = [];
  let materialised = false;
  const valueAt = (id: string) => values.get(id) ?? [];
  for (const step of program.steps) {
    const ranked = await run.step(step, valueAt);
    const kept = (await run.visible(ranked)).slice(0, maxStepNodes);
    values.set(step.id, kept);
    trace.push({ id: step.id, op: step.op, nodes: kept.length });
    if (step.id === program.output) materialised = step.op === "materialise";
  }
  const nodes = valueAt(program.output);
  const read = await run.nodes(nodes);
  return { nodes, read, materialised, trace, ms: performance.now() - started };
}

class Run {
  readonly #context: ExecutionContext;
  readonly #asOfMs: number | undefined;
  readonly #nodes = new Map<string, RawNode>();
  #index: Promise<WalkIndex> | undefined;

  constructor(context: ExecutionContext, asOfMs: number | undefined) {
    this.#context = context;
    this.#asOfMs = asOfMs;
  }

  async step(step: Step, valueAt: (id: string) => readonly string[]): Promise<readonly string[]> {
    const { store, spaces } = this.#context;
    const filters: SearchFilters | undefined = this.#asOfMs === undefined ? undefined : { timeToMs: this.#asOfMs };
    switch (step.op) {
      case "lexical":
        return ids(await store.searchLexical(step.field ?? "text", step.query, { limit: step.limit, filters }));
      case "dense": {
        const vector = await this.#context.embedText(step.query);
        return vector ? ids(await store.searchVectors(spaces.text, vector, { limit: step.limit, filters })) : [];
      }
      case "image-match":
        return this.#imageMatch(step.text, step.image, step.limit, filters);
      case "filter": {
        const nodes = await this.nodes(valueAt(step.input));
        const sessions = step.sessions && new Set(step.sessions);
        const speakers = step.speakers && new Set(step.speakers.map((speaker) => speaker.toLowerCase()));
        return valueAt(step.input).filter((id) => {
          const node = nodes.get(id);
          if (!node) return false;
          const time = Date.parse(node.time);
          if (sessions && !sessions.has(node.sessionKey)) return false;
          if (speakers && !speakers.has((node.speaker ?? "").toLowerCase())) return false;
          if (step.fromMs !== undefined && time < step.fromMs) return false;
          if (step.toMs !== undefined && time > step.toMs) return false;
          return step.entity === undefined || mentions(node, step.entity);
        });
      }
      case "expand": {
        const input = valueAt(step.input);
        const out: string[] = [];
        for (const id of input) {
          out.push(id);
          const near = await this.#context.store.readRawNodes({ near: [id], window: step.window });
          for (const node of near) this.#nodes.set(node.id, node);
          out.push(...near.map((node) => node.id));
        }
        return unique(out);
      }
      case "temporal-walk": {
        const walk = await this.#walkIndex();
        const out: string[] = [];
        for (const id of valueAt(step.input)) {
          out.push(id);
          for (const entry of walk.holders.get(id) ?? []) out.push(...walk.states(entry, step.direction, step.depth));
        }
        return unique(out);
      }
      case "latest": {
        const input = valueAt(step.input);
        const nodes = await this.nodes(input);
        return input
          .filter((id) => {
            const node = nodes.get(id);
            return node !== undefined && (step.entity === undefined || mentions(node, step.entity));
          })
          .map((id, order) => ({ id, order, time: Date.parse(nodes.get(id)?.time ?? "") }))
          .sort((a, b) => b.time - a.time || a.order - b.order)
          .slice(0, step.keep)
          .map((item) => item.id);
      }
      case "materialise":
        return valueAt(step.input);
      case "union": {
        const lists = step.inputs.map((input) => valueAt(input).map((id, rank) => ({ id, score: -rank })));
        return rrf(lists, this.#context.rrfK);
      }
      case "intersect": {
        const [first = [], ...rest] = step.inputs.map((input) => valueAt(input));
        const others = rest.map((list) => new Set(list));
        return first.filter((id) => others.every((set) => set.has(id)));
      }
      case "top-k":
        return valueAt(step.input).slice(0, step.k);
    }
  }

  /** Drops raw nodes after `asOfMs` (a walk or an expansion can reach them) and any that no longer exist. */
  async visible(ids: readonly string[]): Promise<string[]> {
    const nodes = await this.nodes(ids);
    const asOf = this.#asOfMs;
    return ids.filter((id) => {
      const node = nodes.get(id);
      return node !== undefined && (asOf === undefined || Date.parse(node.time) <= asOf);
    });
  }

  /** The raw nodes of `ids`, read once per execution. */
  async nodes(ids: readonly string[]): Promise<Map<string, RawNode>> {
    const missing = ids.filter((id) => !this.#nodes.has(id));
    if (missing.length > 0) {
      for (const node of await this.#context.store.readRawNodes({ ids: missing })) this.#nodes.set(node.id, node);
    }
    return new Map(
      ids.flatMap((id) => {
        const node = this.#nodes.get(id);
        return node ? [[id, node] as const] : [];
      }),
    );
  }

  async #imageMatch(
    text: string | undefined,
    image: string | undefined,
    limit: number,
    filters: SearchFilters | undefined,
  ): Promise<readonly string[]> {
    const { store, spaces } = this.#context;
    if (image !== undefined) {
      if (!spaces.image) return [];
      const known = await store.knownImages([image], spaces.image);
      const vector = known.get(image)?.vector;
      return vector ? ids(await store.searchVectors(spaces.image, vector, { limit, filters })) : [];
    }
    const query = text ?? "";
    const lists: Ranked[][] = [await store.searchLexical("imageText", query, { limit, filters })];
    const vector = await this.#context.embedText(query);
    if (vector) lists.push(await store.searchVectors(spaces.imageText, vector, { limit, filters }));
    return rrf(lists, this.#context.rrfK).slice(0, limit);
  }

  #walkIndex(): Promise<WalkIndex> {
    this.#index ??= this.#context.index().then((state) => new WalkIndex(state));
    return this.#index;
  }
}

/** The active index's update links, both ways, and which entries hold each raw node. */
class WalkIndex {
  readonly holders = new Map<string, IndexEntry[]>();
  readonly #entries: ReadonlyMap<string, IndexEntry>;
  readonly #successors = new Map<string, IndexEntry[]>();

  constructor(state: IndexState) {
    this.#entries = state.entries;
    for (const entry of state.entries.values()) {
      for (const pointer of entry.pointers) this.holders.set(pointer, [...(this.holders.get(pointer) ?? []), entry]);
      if (entry.predecessor) {
        this.#successors.set(entry.predecessor, [...(this.#successors.get(entry.predecessor) ?? []), entry]);
      }
    }
  }

  /** Pointers of the states up to `depth` links away from `entry`, nearest first. */
  states(entry: IndexEntry, direction: "earlier" | "later" | "both", depth: number): string[] {
    const out: string[] = [];
    const seen = new Set([entry.id]);
    let frontier = [entry];
    for (let level = 0; level < depth && frontier.length > 0; level++) {
      const next: IndexEntry[] = [];
      for (const current of frontier) {
        const linked = [
          ...(direction !== "later" && current.predecessor ? [this.#entries.get(current.predecessor)] : []),
          ...(direction !== "earlier" ? (this.#successors.get(current.id) ?? []) : []),
        ];
        for (const state of linked) {
          if (!state || seen.has(state.id)) continue;
          seen.add(state.id);
          next.push(state);
          out.push(...state.pointers);
        }
      }
      frontier = next;
    }
    return out;
  }
}

function ids(ranked: readonly Ranked[]): string[] {
  return ranked.map((hit) => hit.id);
}

function unique(ids: readonly string[]): string[] {
  return [...new Set(ids)];
}

/** Reciprocal-rank fusion (rank r adds 1/(k + r)); ties keep the order of first appearance. */
function rrf(lists: readonly (readonly Ranked[])[], k: number): string[] {
  const scores = new Map<string, { score: number; order: number }>();
  for (const list of lists) {
    list.forEach((hit, index) => {
      const current = scores.get(hit.id) ?? { score: 0, order: scores.size };
      current.score += 1 / (k + index + 1);
      scores.set(hit.id, current);
    });
  }
  return [...scores.entries()].sort(([, a], [, b]) => b.score - a.score || a.order - b.order).map(([id]) => id);
}

/** Whether a raw node's text or its images' text names the entity. */
export function mentions(node: RawNode, entity: string): boolean {
  const needle = entity.toLowerCase();
  if (node.text.toLowerCase().includes(needle)) return true;
  return node.images.some((image) =>
    `${image.caption ?? ""} ${image.derivedText ?? ""}`.toLowerCase().includes(needle),
  );
}
