import { type Scope, scopeKey } from "../../scope.ts";

/**
 * Runs the writes of one scope one after another. The SDK plans index maintenance optimistically
 * and retries a bounded number of times when another write of the same scope commits first; many
 * concurrent writers to one scope could exhaust the retries. Queueing them here means writes
 * arriving through this server never race each other (reads and other scopes are not held).
 */
export class ScopeWrites {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(scope: Scope, write: () => Promise<T>): Promise<T> {
    const key = scopeKey(scope);
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const result = previous.then(write, write);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }
}
