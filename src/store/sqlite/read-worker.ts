/**
 * A read worker of the SQLite store's read pool (`read-pool.ts`): a read-only connection, scoped reads
 * answered one at a time in the order they arrive, and an ANN registry kept current by the main
 * thread's commits and forgets (`change` messages). The scope comes with every call and is bound
 * through `forScope`, so a worker reads only what that scope's handle could.
 */
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import type { ScopedStore } from "../store.ts";
import {
  type FromWorker,
  type PooledMethod,
  pooledMethods,
  type ReadWorkerData,
  type ToWorker,
  toWire,
} from "./read-pool-protocol.ts";
import { SqliteStore } from "./sqlite-store.ts";

function serve(data: ReadWorkerData, port: NonNullable<typeof parentPort>): void {
  const post = (message: FromWorker) => port.postMessage(message);
  let store: SqliteStore;
  try {
    store = SqliteStore.openReader({ path: data.path, vectorIndex: data.vectorIndex });
  } catch (error) {
    post({ kind: "failed", message: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  }
  let externalWrites = data.externalWrites;
  const allowed = new Set<string>(pooledMethods);
  port.on("message", async (message: ToWorker) => {
    if (message.kind === "change") {
      const { change } = message;
      if (change.kind === "commit") store.vectorIndexes.afterCommit(change.scopeKey, change.rows);
      else store.vectorIndexes.afterForget(change.scopeKey, change.removed);
      return;
    }
    if (message.externalWrites !== externalWrites) {
      // Another process committed since this worker loaded its indexes: they may miss rows or hold forgotten ones.
      store.vectorIndexes.resetAll();
      externalWrites = message.externalWrites;
    }
    try {
      if (!allowed.has(message.method)) throw new Error(`${message.method} is not a pooled read`);
      const scoped = store.forScope(message.scope);
      const method = scoped[message.method as PooledMethod] as (
        this: ScopedStore,
        ...args: unknown[]
      ) => Promise<unknown>;
      const value = await method.apply(scoped, [...message.args]);
      post({ kind: "reply", id: message.id, ok: true, value });
    } catch (error) {
      post({ kind: "reply", id: message.id, ok: false, error: toWire(error) });
    }
  });
  post({ kind: "ready" });
}

const data = workerData as Partial<ReadWorkerData> | null;
if (!isMainThread && parentPort && data?.tag === "cairn:read-worker") serve(data as ReadWorkerData, parentPort);
