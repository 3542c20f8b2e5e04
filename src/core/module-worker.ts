import { Worker } from "node:worker_threads";

/**
 * Starts a worker thread running the module at `entry` (its `import.meta.url`). From compiled
 * JavaScript that is a plain `new Worker(url)`. From TypeScript sources (tests, a checkout's CLI) a
 * worker cannot `--import tsx` its own entry on Node 20, so an evaluated bootstrap loads the module
 * through tsx's `tsImport` instead.
 */
export function spawnModuleWorker(entry: string, workerData: unknown): Worker {
  if (!entry.endsWith(".ts")) return new Worker(new URL(entry), { workerData });
  const url = JSON.stringify(entry);
  const tsx = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  const bootstrap = `import(${tsx}).then((tsx) => tsx.tsImport(${url}, ${url}));`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/**
 * The URL of the module `name` (no extension) beside `from` (the caller's `import.meta.url`), with the
 * caller's own extension: `.ts` when running from sources, `.js` when compiled.
 */
export function siblingModule(name: string, from: string): string {
  return new URL(`./${name}${from.endsWith(".ts") ? ".ts" : ".js"}`, from).href;
}
