/**
 * A small LRU of query embeddings. Agents and benchmarks ask the same question several times
 * (retries, several methods, paging); the embedder is the slowest step of a search. Entries are
 * kept per partition (the tenant): a hit is faster than a miss, so a shared entry would tell one
 * tenant what another recently asked.
 */
export class EmbeddingCache {
  readonly #entries = new Map<string, Float32Array>();
  readonly #capacity: number;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  async get(
    partition: string,
    text: string,
    embed: (text: string) => Promise<Float32Array | undefined>,
  ): Promise<Float32Array | undefined> {
    // "/" cannot occur in a tenant id, so no two (partition, text) pairs share a key.
    const key = `${partition}/${text}`;
    const cached = this.#entries.get(key);
    if (cached) {
      this.#entries.delete(key);
      this.#entries.set(key, cached);
      return cached;
    }
    const vector = await embed(text);
    if (vector && this.#capacity > 0) {
      this.#entries.set(key, vector);
      if (this.#entries.size > this.#capacity) this.#entries.delete(this.#entries.keys().next().value as string);
    }
    return vector;
  }
}
