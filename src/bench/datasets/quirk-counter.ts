/**
 * Counts what a loader handled (data quirks, lossy mappings) so `BenchDataset.notes` can say it with numbers:
 * `"evidence ids that match no turn (dropped): 3"`. Notes keep the order in which their kind was first seen.
 */
export class QuirkCounter {
  readonly #counts = new Map<string, number>();

  add(description: string, count = 1): void {
    if (count <= 0) return;
    this.#counts.set(description, (this.#counts.get(description) ?? 0) + count);
  }

  count(description: string): number {
    return this.#counts.get(description) ?? 0;
  }

  notes(): string[] {
    return [...this.#counts].map(([description, count]) => `${description}: ${count}`);
  }
}
