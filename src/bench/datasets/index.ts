import { statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { InputError } from "../../core/errors.ts";
import type { BenchDataset } from "../dataset.ts";
import { loadLcmp } from "./lcmp.ts";
import { loadLocomo } from "./locomo.ts";
import { loadMemGallery } from "./mem-gallery.ts";
import type { LoadOptions } from "./read-data.ts";

export { citedTurns, lcmpKinds, loadLcmp } from "./lcmp.ts";
export { loadLocomo, locomoCategories, locomoNotMentioned } from "./locomo.ts";
export { loadMemGallery, memGalleryTasks } from "./mem-gallery.ts";
export type { LoadOptions } from "./read-data.ts";

export const datasetNames = ["locomo", "mem-gallery", "lcmp"] as const;
export type DatasetName = (typeof datasetNames)[number];

const loaders: Readonly<Record<DatasetName, (dataDir: string, options?: LoadOptions) => Promise<BenchDataset>>> = {
  locomo: loadLocomo,
  "mem-gallery": loadMemGallery,
  lcmp: loadLcmp,
};

/**
 * Loads one of the real benchmark datasets from the shared data folder (see `resolveDataDir`).
 *
 * @example const dataset = await loadDataset("locomo", resolveDataDir(flags.data), { limit: 1 });
 */
export function loadDataset(name: DatasetName, dataDir: string, options: LoadOptions = {}): Promise<BenchDataset> {
  const loader = (loaders as Record<string, (typeof loaders)[DatasetName] | undefined>)[name];
  if (loader === undefined) {
    return Promise.reject(new InputError("dataset", `unknown dataset "${name}"; expected ${datasetNames.join(", ")}`));
  }
  return loader(dataDir, options);
}

/** `../shared/data` next to the repository (this file is `<repo>/src/bench/datasets/index.ts`). */
export const defaultDataDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../shared/data");

/**
 * Where the datasets live: the `--data` flag, else `CAIRN_DATA`, else `../shared/data` relative to the repository
 * root. The data is third-party and is read in place, never copied into the repository. Throws `InputError` naming
 * the source of the path when it is not a folder.
 *
 * @example resolveDataDir(undefined, { CAIRN_DATA: "/data/benchmarks" }) // "/data/benchmarks"
 */
export function resolveDataDir(
  flag?: string,
  environment: Readonly<Record<string, string | undefined>> = process.env,
): string {
  const fromFlag = flag?.trim() ? flag : undefined;
  const fromEnvironment = environment.CAIRN_DATA?.trim() ? environment.CAIRN_DATA : undefined;
  const [field, chosen] =
    fromFlag !== undefined
      ? ["--data", fromFlag]
      : fromEnvironment !== undefined
        ? ["CAIRN_DATA", fromEnvironment]
        : ["data folder", defaultDataDir];
  const resolved = path.resolve(chosen);
  let isFolder = false;
  try {
    isFolder = statSync(resolved).isDirectory();
  } catch {
    isFolder = false;
  }
  if (!isFolder) {
    const hint = field === "data folder" ? "; pass --data <folder> or set CAIRN_DATA" : "";
    throw new InputError(field, `${resolved} is not a folder${hint}`);
  }
  return resolved;
}
