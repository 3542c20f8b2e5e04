import type { Worker } from "node:worker_threads";
import { StoreError } from "../../core/errors.ts";
import { siblingModule, spawnModuleWorker } from "../../core/module-worker.ts";
import type { Scope } from "../../core/scope.ts";
import type { VectorIndexOptions } from "../vector-index-options.ts";
import {
  type FromWorker,
  fromWire,
  type PooledMethod,
  type ReadWorkerData,
  type ToWorker,
} from "./read-pool-protocol.ts";
import type { VectorIndexes } from "./vector-indexes.ts";

interface Pending {
  readonly method: PooledMethod;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
}

interface PoolOptions {
  readonly path: string;
  readonly vectorIndex: Partial<VectorIndexOptions> | undefined;
  /** The main thread's ANN registry: its commits and forgets are forwarded, its watch is asked. */
  readonly indexes: VectorIndexes;
}

interface Slot {
  readonly worker: Worker;
  readonly pending: Map<number, Pending>;
}

/**
 * Worker threads answering a SQLite store's reads (decision 023). Each holds its own read-only
 * connection on the store's file (WAL lets readers run beside the writer) and its own ANN registry,
 * which follows the main thread: every commit's and forget's vector changes are posted to every worker
 * before the write returns, so a search sent after a write is answered after the worker applied it (a
 * port delivers in order), and a commit by another process, noticed by the main thread's registry,
 * makes the workers drop what they loaded before their next search. A call is sent to the worker with
 * the fewest calls outstanding. A worker that dies fails its outstanding calls with a `StoreError`
 * and is replaced; `close()` terminates them all.
 */
export class ReadPool {
  readonly #options: PoolOptions;
  readonly #slots: Slot[] = [];
  #nextId = 0;
  #closed = false;

  private constructor(options: PoolOptions) {
    this.#options = options;
  }

  /** Starts `workers` threads and resolves once each has opened the store (a failure stops them all). */
  static async start(options: PoolOptions & { readonly workers: number }): Promise<ReadPool> {
    const pool = new ReadPool({ path: options.path, vectorIndex: options.vectorIndex, indexes: options.indexes });
    const started = Array.from({ length: options.workers }, () => pool.#spawn());
    const results = await Promise.allSettled(started.map((slot) => slot.ready));
    const failed = results.find((result) => result.status === "rejected");
    if (failed) {
      await pool.close();
      throw failed.reason;
    }
    options.indexes.follow((change) => pool.#broadcast({ kind: "change", change }));
    return pool;
  }

  get size(): number {
    return this.#slots.length;
  }

  /** The worker threads, in slot order: for supervision (and tests that stop one). */
  get threads(): readonly Worker[] {
    return this.#slots.map((slot) => slot.worker);
  }

  /** Runs one scoped read in the least busy worker. */
  call(scope: Scope, method: PooledMethod, args: readonly unknown[]): Promise<unknown> {
    if (this.#closed) return Promise.reject(new StoreError(method, "store is closed"));
    const slot = this.#leastBusy();
    if (!slot) return Promise.reject(new StoreError(method, "no read worker is running"));
    const id = ++this.#nextId;
    const message: ToWorker = {
      kind: "call",
      id,
      scope,
      method,
      args,
      externalWrites: this.#options.indexes.externalWrites(),
    };
    return new Promise((resolve, reject) => {
      if (slot.pending.size === 0) slot.worker.ref();
      slot.pending.set(id, { method, resolve, reject });
      slot.worker.postMessage(message);
    });
  }

  /** Terminates every worker; calls still outstanding fail with a `StoreError`. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const slots = this.#slots.splice(0);
    await Promise.all(
      slots.map(async (slot) => {
        // An idle worker is unref'd: without this, the event loop could empty before its exit is seen.
        slot.worker.ref();
        await slot.worker.terminate();
        this.#failPending(slot, "the store was closed");
      }),
    );
  }

  #spawn(): Slot & { ready: Promise<void> } {
    const data: ReadWorkerData = {
      tag: "cairn:read-worker",
      path: this.#options.path,
      vectorIndex: this.#options.vectorIndex,
      externalWrites: this.#options.indexes.externalWrites(),
    };
    const worker = spawnModuleWorker(siblingModule("read-worker", import.meta.url), data);
    const slot: Slot = { worker, pending: new Map() };
    this.#slots.push(slot);
    let started = false;
    const ready = new Promise<void>((resolve, reject) => {
      worker.on("message", (message: FromWorker) => {
        if (message.kind === "ready") {
          started = true;
          // Idle workers do not keep the process alive; one with a call outstanding does (`call`).
          if (slot.pending.size === 0) worker.unref();
          resolve();
        } else if (message.kind === "failed") reject(new StoreError("readPool", message.message));
        else this.#settle(slot, message);
      });
      worker.on("error", (error) => {
        if (!started) reject(new StoreError("readPool", error));
      });
      worker.on("exit", (code) => {
        if (!started) reject(new StoreError("readPool", `a read worker exited with code ${code} while starting`));
        this.#failPending(slot, `its read worker stopped (exit code ${code})`);
        const position = this.#slots.indexOf(slot);
        if (position < 0) return;
        this.#slots.splice(position, 1);
        // A worker that had started is replaced; one that could not start is not retried in a loop.
        if (started && !this.#closed) this.#spawn().ready.catch(() => {});
      });
    });
    return Object.assign(slot, { ready });
  }

  #settle(slot: Slot, reply: Extract<FromWorker, { kind: "reply" }>): void {
    const pending = slot.pending.get(reply.id);
    if (!pending) return;
    slot.pending.delete(reply.id);
    if (slot.pending.size === 0) slot.worker.unref();
    if (reply.ok) pending.resolve(reply.value);
    else pending.reject(fromWire(reply.error, pending.method));
  }

  #failPending(slot: Slot, reason: string): void {
    for (const pending of slot.pending.values()) pending.reject(new StoreError(pending.method, reason));
    slot.pending.clear();
  }

  #broadcast(message: ToWorker): void {
    for (const slot of this.#slots) slot.worker.postMessage(message);
  }

  #leastBusy(): Slot | undefined {
    let best: Slot | undefined;
    // Rotating the starting point spreads ties, so two idle workers share a search's passes.
    const offset = this.#nextId % Math.max(1, this.#slots.length);
    for (let step = 0; step < this.#slots.length; step++) {
      const slot = this.#slots[(offset + step) % this.#slots.length] as Slot;
      if (!best || slot.pending.size < best.pending.size) best = slot;
    }
    return best;
  }
}

/** The worker module's extension: `.ts` from sources, `.js` once compiled. */
