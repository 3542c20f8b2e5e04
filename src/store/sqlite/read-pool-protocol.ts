/**
 * What the read pool (`read-pool.ts`, main thread) and its workers (`read-worker.ts`) say to each
 * other, and how a typed error crosses the thread boundary. A leaf both sides import.
 */
import {
  CairnError,
  ConfigError,
  ConflictError,
  InputError,
  InvariantError,
  ModelMismatchError,
  NotFoundError,
  StoreError,
} from "../../core/errors.ts";
import type { Scope } from "../../core/scope.ts";
import type { VectorIndexOptions } from "../vector-index-options.ts";
import type { IndexChange } from "./vector-indexes.ts";

/**
 * The scoped store's methods a worker answers: the channel passes, a search's heavy part (FTS5
 * ranking, the ANN or vec0 scan). Both only read, so any worker's connection answers them as the
 * main thread's would. Reads by id stay on the calling thread: a B-tree lookup costs less than the
 * round trip to a worker (an earlier version sent them too; decision 023).
 */
export const pooledMethods = ["searchLexical", "searchVectors"] as const;
export type PooledMethod = (typeof pooledMethods)[number];

export interface ReadWorkerData {
  readonly tag: "cairn:read-worker";
  readonly path: string;
  readonly vectorIndex: Partial<VectorIndexOptions> | undefined;
  /** The main thread's count of other processes' commits when the worker started (see `VectorIndexes.externalWrites`). */
  readonly externalWrites: number;
}

export type ToWorker =
  | {
      readonly kind: "call";
      readonly id: number;
      readonly scope: Scope;
      readonly method: PooledMethod;
      readonly args: readonly unknown[];
      readonly externalWrites: number;
    }
  /** A commit or forget of the main thread's connection, for the worker's ANN indexes. */
  | { readonly kind: "change"; readonly change: IndexChange };

export type FromWorker =
  | { readonly kind: "ready" }
  | { readonly kind: "failed"; readonly message: string }
  | { readonly kind: "reply"; readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly kind: "reply"; readonly id: number; readonly ok: false; readonly error: WireError };

/** An error as plain data: its class name and the fields its constructor takes. */
export interface WireError {
  readonly name: string;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

export function toWire(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: "Error", message: String(error), fields: {} };
  const fields: Record<string, unknown> = {};
  if (error instanceof InputError) Object.assign(fields, { field: error.field, reason: error.reason });
  else if (error instanceof NotFoundError) Object.assign(fields, { kind: error.kind, id: error.id });
  else if (error instanceof StoreError) {
    const cause = error.cause instanceof Error ? error.cause.message : String(error.cause);
    Object.assign(fields, { operation: error.operation, cause });
  } else if (error instanceof InvariantError) Object.assign(fields, { invariant: error.invariant, ids: error.ids });
  else if (error instanceof ModelMismatchError) Object.assign(fields, { stored: error.stored, current: error.current });
  return { name: CairnError.is(error) ? error.name : "Error", message: error.message, fields };
}

/**
 * The error a worker raised, as the class the calling thread would have seen inline. An error that is
 * not one of Cairn's (SQLite's own, say) becomes a `StoreError` of the method, keeping its message.
 */
export function fromWire(wire: WireError, method: string): Error {
  const text = (name: string) => String(wire.fields[name] ?? "");
  const list = (name: string) => (Array.isArray(wire.fields[name]) ? (wire.fields[name] as string[]) : []);
  switch (wire.name) {
    case "InputError":
      return new InputError(text("field"), text("reason"));
    case "NotFoundError":
      return new NotFoundError(text("kind"), text("id"));
    case "ConflictError":
      return new ConflictError(wire.message);
    case "StoreError":
      return new StoreError(text("operation"), text("cause"));
    case "InvariantError":
      return new InvariantError(text("invariant"), wire.message, list("ids"));
    case "ModelMismatchError":
      return new ModelMismatchError(list("stored"), list("current"));
    case "ConfigError":
      return new ConfigError(wire.message);
    default:
      return new StoreError(method, wire.message);
  }
}
