import type { ContextItem } from "./working-context.ts";

/** One model call's usage: input tokens (of which some may be read from the provider's prompt cache) and output. */
export interface CallUsage {
  readonly input: number;
  readonly cachedInput: number;
  readonly output: number;
}

export interface LedgerTotals {
  readonly calls: number;
  readonly input: number;
  readonly cachedInput: number;
  readonly output: number;
  /** VERA's B.2 metric: uncached input plus output, summed over every call (cache reads excluded). */
  readonly nonCache: number;
}

/**
 * Cumulative token accounting of one trajectory. Every call adds its uncached input and its output; cache
 * reads are counted apart and never in `nonCache`.
 *
 * @example const ledger = new TokenLedger(); ledger.record({ input: 900, cachedInput: 800, output: 50 }); ledger.totals.nonCache // 150
 */
export class TokenLedger {
  #calls = 0;
  #input = 0;
  #cached = 0;
  #output = 0;

  record(usage: CallUsage): void {
    if (
      ![usage.input, usage.cachedInput, usage.output].every((value) => Number.isInteger(value) && value >= 0) ||
      usage.cachedInput > usage.input
    ) {
      throw new RangeError(`invalid usage ${JSON.stringify(usage)}`);
    }
    this.#calls++;
    this.#input += usage.input;
    this.#cached += usage.cachedInput;
    this.#output += usage.output;
  }

  get totals(): LedgerTotals {
    return {
      calls: this.#calls,
      input: this.#input,
      cachedInput: this.#cached,
      output: this.#output,
      nonCache: this.#input - this.#cached + this.#output,
    };
  }
}

/**
 * Tokens a prefix cache would serve: the cost of the leading items two consecutive calls share unchanged
 * (providers cache whole prompt prefixes; a manager that rewrites the context breaks the prefix there).
 */
export function sharedPrefixTokens(previous: readonly ContextItem[], next: readonly ContextItem[]): number {
  let tokens = 0;
  for (let index = 0; index < Math.min(previous.length, next.length); index++) {
    const before = previous[index];
    const after = next[index];
    if (before === undefined || after === undefined) break;
    if (before !== after && JSON.stringify(before.message) !== JSON.stringify(after.message)) break;
    tokens += after.textTokens + after.imageTokens;
  }
  return tokens;
}
