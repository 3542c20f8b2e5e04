/**
 * A small LRU of query embeddings. Agents and benchmarks ask the same question several times
 * (retries, several methods, paging); the embedder is the slowest step of a search.
 */
export class EmbeddingCache {
  readonly #entries = new Map<string, Float32Array>();
  readonly #capacity: number;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  async get(
    text: string,
    embed: (text: string) => Promise<Float32Array | undefined>,
  ): Promise<Float32Array | undefined> {
    const cached = this.#entries.get(text);
    if (cached) {
      this.#entries.delete(text);
      this.#entries.set(text, cached);
      return cached;
    }
    const vector = await embed(text);
    if (vector && this.#capacity > 0) {
      this.#entries.set(text, vector);
      if (this.#entries.size > this.#capacity) this.#entries.delete(this.#entries.keys().next().value as string);
    }
    return vector;
  }
}
