import { isRecord } from "../core/narrow.ts";
import {
  inputsOf,
  type Operator,
  operators,
  outputType,
  type Program,
  programLimits,
  type Step,
  type ValueType,
} from "./program.ts";
import { ProgramError } from "./program-error.ts";

export interface ValidationContext {
  /**
   * Entities the scope knows (lower case); a filter or latest step naming another is refused. Null
   * skips the check: a banked program's entities were checked when it was banked.
   */
  readonly entities: ReadonlySet<string> | null;
}

const operatorSet: ReadonlySet<string> = new Set(operators);

/** What each operator reads: nothing (a search), one input, or several. */
const arity: Readonly<Record<Operator, "source" | "one" | "many">> = {
  lexical: "source",
  dense: "source",
  "image-match": "source",
  filter: "one",
  expand: "one",
  "temporal-walk": "one",
  latest: "one",
  materialise: "one",
  union: "many",
  intersect: "many",
  "top-k": "one",
};

/**
 * Checks untrusted program JSON and returns it as a `Program`: known operators only, fields of the
 * right types, every reference to an earlier-defined step (so the dataflow is acyclic), inputs of
 * the type each operator reads (`nodes`; `evidence` is terminal), entities the scope knows, and
 * every fan-out bounded. Throws a `ProgramError` naming the first problem.
 */
export function validateProgram(value: unknown, context: ValidationContext): Program {
  if (!isRecord(value) || Array.isArray(value)) throw new ProgramError("malformed", null, "must be an object");
  if (value.version !== 1) throw new ProgramError("malformed", null, "version must be 1");
  if (!Array.isArray(value.steps) || value.steps.length === 0)
    throw new ProgramError("malformed", null, "steps must be a non-empty array");
  if (value.steps.length > programLimits.maxSteps)
    throw new ProgramError("unbounded-fan-out", null, `at most ${programLimits.maxSteps} steps`);
  const steps = value.steps.map((raw, index) => parseStep(raw, index, context));
  const declared = new Set<string>();
  for (const step of steps) {
    if (declared.has(step.id)) throw new ProgramError("duplicate-step", step.id, "id used twice");
    declared.add(step.id);
  }
  const types = new Map<string, ValueType>();
  const order = topologicalOrder(steps, declared);
  for (const step of order) {
    for (const input of inputsOf(step)) {
      const type = types.get(input);
      if (type !== "nodes") {
        throw new ProgramError("type-mismatch", step.id, `${step.op} reads nodes; ${input} yields ${type}`);
      }
    }
    types.set(step.id, outputType(step.op));
  }
  if (typeof value.output !== "string" || !declared.has(value.output))
    throw new ProgramError("unknown-step", null, "output must name a step");
  return Object.freeze({ version: 1, steps: order, output: value.output });
}

/** Kahn's order over the steps; a reference to an undeclared step or a cycle is refused. */
function topologicalOrder(steps: readonly Step[], declared: ReadonlySet<string>): Step[] {
  for (const step of steps) {
    for (const input of inputsOf(step)) {
      if (!declared.has(input)) throw new ProgramError("unknown-step", step.id, `reads ${input}, which is no step`);
      if (input === step.id) throw new ProgramError("cycle", step.id, "reads itself");
    }
  }
  const placed = new Set<string>();
  const order: Step[] = [];
  let pending = [...steps];
  while (pending.length > 0) {
    const ready = pending.filter((step) => inputsOf(step).every((input) => placed.has(input)));
    if (ready.length === 0) {
      throw new ProgramError(
        "cycle",
        pending[0]?.id ?? null,
        `steps ${pending.map((step) => step.id).join(", ")} form a cycle`,
      );
    }
    for (const step of ready) {
      placed.add(step.id);
      order.push(step);
    }
    pending = pending.filter((step) => !placed.has(step.id));
  }
  return order;
}

function parseStep(raw: unknown, index: number, context: ValidationContext): Step {
  if (!isRecord(raw) || Array.isArray(raw)) throw new ProgramError("malformed", String(index), "must be an object");
  const id = raw.id;
  if (typeof id !== "string" || !/^[A-Za-z][\w-]{0,31}$/.test(id))
    throw new ProgramError("malformed", String(index), "id must be a short name (letters, digits, - or _)");
  const op = raw.op;
  if (typeof op !== "string" || !operatorSet.has(op))
    throw new ProgramError("unknown-operator", id, `${String(op)} is not an operator (${operators.join(", ")})`);
  const operator = op as Operator;
  const fields = new Fields(id, raw);
  const shape = arity[operator];
  if (shape === "one" && typeof raw.input !== "string")
    throw new ProgramError("malformed", id, "input must name a step");
  if (shape === "many") {
    const inputs = raw.inputs;
    if (!Array.isArray(inputs) || inputs.length < 2 || !inputs.every((input) => typeof input === "string"))
      throw new ProgramError("malformed", id, "inputs must name at least two steps");
    if (inputs.length > programLimits.maxInputs)
      throw new ProgramError("unbounded-fan-out", id, `at most ${programLimits.maxInputs} inputs`);
  }
  const entity = (name: string) => {
    const value = fields.optionalString(name);
    if (value !== undefined && context.entities && !context.entities.has(value.toLowerCase()))
      throw new ProgramError("unknown-entity", id, `${value} is no entity this memory knows`);
    return value?.toLowerCase();
  };
  const step = ((): Step => {
    switch (operator) {
      case "lexical": {
        const field = raw.field;
        if (field !== undefined && field !== "text" && field !== "imageText")
          throw new ProgramError("malformed", id, "field must be text or imageText");
        return {
          id,
          op: operator,
          query: fields.query("query"),
          limit: fields.bounded("limit", programLimits.maxFanOut),
          ...(field ? { field } : {}),
        };
      }
      case "dense":
        return {
          id,
          op: operator,
          query: fields.query("query"),
          limit: fields.bounded("limit", programLimits.maxFanOut),
        };
      case "image-match": {
        const text = fields.optionalString("text");
        const image = fields.optionalString("image");
        if ((text === undefined) === (image === undefined))
          throw new ProgramError("malformed", id, "give text or image, not both");
        if (image !== undefined && !/^[0-9a-f]{64}$/.test(image))
          throw new ProgramError("malformed", id, "image must be a SHA-256 hash");
        return {
          id,
          op: operator,
          ...(text !== undefined ? { text: fields.query("text") } : { image }),
          limit: fields.bounded("limit", programLimits.maxFanOut),
        };
      }
      case "filter": {
        const sessions = fields.optionalStrings("sessions");
        const speakers = fields.optionalStrings("speakers");
        const fromMs = fields.optionalTime("fromMs");
        const toMs = fields.optionalTime("toMs");
        const named = entity("entity");
        if (!sessions && !speakers && fromMs === undefined && toMs === undefined && named === undefined)
          throw new ProgramError("malformed", id, "a filter needs at least one condition");
        return {
          id,
          op: operator,
          input: String(raw.input),
          ...(sessions ? { sessions } : {}),
          ...(speakers ? { speakers } : {}),
          ...(fromMs !== undefined ? { fromMs } : {}),
          ...(toMs !== undefined ? { toMs } : {}),
          ...(named !== undefined ? { entity: named } : {}),
        };
      }
      case "expand":
        return {
          id,
          op: operator,
          input: String(raw.input),
          window: fields.bounded("window", programLimits.maxWindow),
        };
      case "temporal-walk": {
        const direction = raw.direction;
        if (direction !== "earlier" && direction !== "later" && direction !== "both")
          throw new ProgramError("malformed", id, "direction must be earlier, later or both");
        return {
          id,
          op: operator,
          input: String(raw.input),
          direction,
          depth: fields.bounded("depth", programLimits.maxDepth),
        };
      }
      case "latest": {
        const named = entity("entity");
        return {
          id,
          op: operator,
          input: String(raw.input),
          keep: fields.bounded("keep", programLimits.maxFanOut),
          ...(named !== undefined ? { entity: named } : {}),
        };
      }
      case "materialise":
        return { id, op: operator, input: String(raw.input) };
      case "union":
      case "intersect":
        return { id, op: operator, inputs: (raw.inputs as string[]).slice() };
      case "top-k":
        return { id, op: operator, input: String(raw.input), k: fields.bounded("k", programLimits.maxFanOut) };
    }
  })();
  return Object.freeze(step);
}

/** Field readers that throw the right `ProgramError` for the step they read. */
class Fields {
  readonly #id: string;
  readonly #raw: Record<string, unknown>;
  constructor(id: string, raw: Record<string, unknown>) {
    this.#id = id;
    this.#raw = raw;
  }

  query(name: string): string {
    const value = this.#raw[name];
    if (typeof value !== "string" || !value.trim())
      throw new ProgramError("malformed", this.#id, `${name} must be text`);
    if (value.length > programLimits.maxQueryChars)
      throw new ProgramError(
        "malformed",
        this.#id,
        `${name} must be at most ${programLimits.maxQueryChars} characters`,
      );
    return value.trim();
  }

  /** A positive integer no larger than `max`; absent or larger is unbounded work. */
  bounded(name: string, max: number): number {
    const value = this.#raw[name];
    if (value === undefined || value === null)
      throw new ProgramError("unbounded-fan-out", this.#id, `${name} is required (at most ${max})`);
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1)
      throw new ProgramError("malformed", this.#id, `${name} must be a positive integer`);
    if (value > max) throw new ProgramError("unbounded-fan-out", this.#id, `${name} must be at most ${max}`);
    return value;
  }

  optionalString(name: string): string | undefined {
    const value = this.#raw[name];
    if (value === undefined) return undefined;
    if (typeof value !== "string" || !value.trim())
      throw new ProgramError("malformed", this.#id, `${name} must be text`);
    return value.trim();
  }

  optionalStrings(name: string): string[] | undefined {
    const value = this.#raw[name];
    if (value === undefined) return undefined;
    if (!Array.isArray(value) || value.length === 0 || !value.every((item) => typeof item === "string"))
      throw new ProgramError("malformed", this.#id, `${name} must be a non-empty list of text`);
    if (value.length > programLimits.maxFanOut)
      throw new ProgramError("unbounded-fan-out", this.#id, `${name} must list at most ${programLimits.maxFanOut}`);
    return value.slice();
  }

  optionalTime(name: string): number | undefined {
    const value = this.#raw[name];
    if (value === undefined) return undefined;
    if (typeof value !== "number" || !Number.isSafeInteger(value))
      throw new ProgramError("malformed", this.#id, `${name} must be epoch milliseconds`);
    return value;
  }
}
