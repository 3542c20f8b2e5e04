import type { KeyedQueue } from "../../core/keyed-queue.ts";
import type { AnnIndexes } from "./ann-indexes.ts";
import type { VectorSpaces } from "./vector-spaces.ts";

/**
 * What the scoped store's parts need from the store that opened them: a narrow seam, so they never
 * import `PostgresStore` itself (which creates them) and the two cannot form an import cycle.
 */
export interface StoreServices {
  readonly spaces: VectorSpaces;
  readonly vectorSearch: VectorSearchOptions;
  /** This process's in-memory ANN indexes of large scopes (decision 025). */
  readonly ann: AnnIndexes;
  /**
   * Writes of one scope from this process take turns, in call order (as with SQLite), instead of
   * each holding a connection while it waits for the scope's row lock; other processes still meet
   * at that lock.
   */
  readonly writers: KeyedQueue;
  /** (vector table, scope key) → when the scope was last counted above `exactBelow` (search-vectors.ts). */
  readonly largeScopes: Map<string, number>;
  now(): number;
  newId(prefix: string): string;
}

export interface VectorSearchOptions {
  /** Up to this many vectors of a scope in a space, search scans them exactly; above it, through the ANN index. */
  readonly exactBelow: number;
}

/** One scope of the store: every statement a part runs binds `key`, inside a transaction walled to `tenant`. */
export interface ScopeContext {
  readonly key: string;
  readonly tenant: string;
  readonly store: StoreServices;
}
