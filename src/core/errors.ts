/**
 * Typed errors. Every error Cairn raises on purpose is a `CairnError` carrying the
 * context a caller needs to act on it; surfaces map `code` to exit codes / HTTP statuses.
 */
const marker = Symbol.for("cairn.error");

export type ErrorCode = "input" | "not_found" | "conflict" | "store" | "provider" | "config" | "invariant";

export class CairnError extends Error {
  readonly [marker] = true;
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
  static is(value: unknown): value is CairnError {
    return typeof value === "object" && value !== null && marker in value;
  }
}

/** Untrusted input was rejected; `field` names where (e.g. `line 3: turns[0].images[1].path`). */
export class InputError extends CairnError {
  readonly field: string;
  readonly reason: string;
  constructor(field: string, reason: string, options?: { cause?: unknown }) {
    super("input", `${field}: ${reason}`, options);
    this.field = field;
    this.reason = reason;
  }
}

/** The id does not exist in this scope (ids from other scopes answer exactly the same). */
export class NotFoundError extends CairnError {
  readonly kind: string;
  readonly id: string;
  constructor(kind: string, id: string) {
    super("not_found", `${kind} ${id} not found`);
    this.kind = kind;
    this.id = id;
  }
}

/** A write collides with what is already stored (e.g. a session id reused with other content). */
export class ConflictError extends CairnError {
  constructor(message: string) {
    super("conflict", message);
  }
}

export class StoreError extends CairnError {
  readonly operation: string;
  constructor(operation: string, cause: unknown) {
    super("store", `store operation ${operation} failed: ${describe(cause)}`, { cause });
    this.operation = operation;
  }
}

export class ProviderError extends CairnError {
  readonly provider: string;
  readonly model: string;
  readonly body: string | undefined;
  constructor(provider: string, model: string, message: string, options?: { body?: string; cause?: unknown }) {
    super("provider", `${provider}/${model}: ${message}`, { cause: options?.cause });
    this.provider = provider;
    this.model = model;
    this.body = options?.body;
  }
}

export class ConfigError extends CairnError {
  constructor(message: string) {
    super("config", message);
  }
}

/**
 * The scope's vectors were made by other models than the ones in use: a search would find nothing
 * in them and a write would mix two models in one scope. Names both, so the fix is obvious (open
 * with the models that built the store, or rebuild its vectors).
 */
export class ModelMismatchError extends ConfigError {
  readonly stored: readonly string[];
  readonly current: readonly string[];
  constructor(stored: readonly string[], current: readonly string[]) {
    super(
      `this scope's vectors were made by ${stored.join(", ")}, but the models in use make ${current.join(", ")}: ` +
        "open it with the model profile that built it (e.g. --profile / CAIRN_PROFILE), rebuild its vectors " +
        'with the models in use (`cairn reembed`, `memory.reembed(scope)`), or pass onModelMismatch: "warn" to ' +
        "search without those vectors",
    );
    this.stored = Object.freeze([...stored]);
    this.current = Object.freeze([...current]);
  }
}

/**
 * Cairn broke one of its own rules (an index op names an entry that is not there, a list that
 * was just checked non-empty is empty): a bug or a damaged store, never the caller's input.
 * `invariant` names the rule, `ids` the records involved, so a report can be acted on.
 *
 * @example
 * throw new InvariantError("working-index-entry", `index entry ${id} is not in the working index`, [id]);
 */
export class InvariantError extends CairnError {
  readonly invariant: string;
  readonly ids: readonly string[];
  constructor(invariant: string, message: string, ids: readonly string[] = []) {
    super("invariant", message);
    this.invariant = invariant;
    this.ids = Object.freeze([...ids]);
  }
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
