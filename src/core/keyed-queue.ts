/** Runs tasks one at a time per key, in arrival order; tasks of different keys run concurrently. */
export class KeyedQueue {
  readonly #tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const current = previous.catch(() => undefined).then(task);
    this.#tails.set(key, current);
    try {
      return await current;
    } finally {
      if (this.#tails.get(key) === current) this.#tails.delete(key);
    }
  }
}
