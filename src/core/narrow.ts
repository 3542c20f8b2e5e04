import { InvariantError } from "./errors.ts";

/** Narrowing helpers: checks that tell the type checker what an `as T` cast would only assert. */

/** A non-null object (arrays included): what parsed JSON or an options bag is before its fields are checked. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/**
 * The item at `index`, which the caller has already proved is there (a length check, a loop
 * bound). When it is not, that proof was wrong: an `InvariantError` named `invariant`.
 *
 * @example
 * const [older, newer] = [itemAt(sorted, 0, "two-active-entries"), itemAt(sorted, 1, "two-active-entries")];
 */
export function itemAt<T>(items: readonly T[], index: number, invariant: string): T {
  const item = items[index];
  if (item === undefined) {
    throw new InvariantError(invariant, `${invariant}: expected an item at ${index}, the list has ${items.length}`);
  }
  return item;
}
