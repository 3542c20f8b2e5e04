import { ConfigError } from "../../errors.ts";
import type { BenchMethod } from "../method.ts";
import { searchMethod } from "./search-method.ts";
import { fullContext, recencyWindow } from "./timeline-methods.ts";

/** Every method the harness knows, in report order. Later mechanisms add themselves here. */
export const benchMethods: readonly BenchMethod[] = [
  fullContext,
  recencyWindow,
  searchMethod("bm25", "BM25 over raw-node text only", { channels: ["bm25"] }),
  searchMethod("dense", "dense text vectors only", { channels: ["dense"] }),
  searchMethod("image", "the image channel only (image-derived text, image vectors)", { channels: ["image"] }),
  searchMethod("tri-path", "M2A tri-path: BM25 + dense + image, top-10 each, RRF k=60", {
    channels: ["bm25", "dense", "image"],
  }),
  searchMethod("caption-rag", "text RAG with images reduced to captions/OCR (no pixels, no image vectors)", {
    vision: false,
    useQueryImage: false,
  }),
  searchMethod("cairn", "Cairn's default search (today the tri-path pipeline; routing lands later)", {}),
];

export function selectMethods(names: string): BenchMethod[] {
  if (names === "all") return [...benchMethods];
  return names.split(",").map((name) => {
    const method = benchMethods.find((candidate) => candidate.name === name.trim());
    if (!method) {
      throw new ConfigError(`unknown method ${name} (${benchMethods.map((known) => known.name).join(", ")}, all)`);
    }
    return method;
  });
}
