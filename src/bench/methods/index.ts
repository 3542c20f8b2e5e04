import { ConfigError } from "../../core/errors.ts";
import type { BenchMethod } from "../method.ts";
import { maintenanceBaselines, storedIndexMethod } from "./index-methods.ts";
import { pmmcMethods } from "./pmmc-methods.ts";
import { searchMethod } from "./search-method.ts";
import { fullContext, recencyWindow } from "./timeline-methods.ts";

/** Every method the harness knows, in report order. Later mechanisms add themselves here. */
export const benchMethods: readonly BenchMethod[] = [
  fullContext,
  recencyWindow,
  searchMethod("bm25", "BM25 over raw-node text only", { mode: "tri-path", channels: ["bm25"] }),
  searchMethod("dense", "dense text vectors only", { mode: "tri-path", channels: ["dense"] }),
  searchMethod("image", "the image channel only (image-derived text, image vectors)", {
    mode: "tri-path",
    channels: ["image"],
  }),
  searchMethod("tri-path", "M2A tri-path: BM25 + dense + image, top-10 each, RRF k=60", {
    mode: "tri-path",
    channels: ["bm25", "dense", "image"],
  }),
  searchMethod("caption-rag", "text RAG with images reduced to captions/OCR (no pixels, no image vectors)", {
    mode: "tri-path",
    vision: false,
    useQueryImage: false,
  }),
  // Routing read alone follows overflow chains 12 levels deep (decision 029); the default search, 3.
  storedIndexMethod("c3m", "C3M: RAMU-maintained index read by budgeted routing only (BMER, γ=0.2, λ=0.15)", {
    mode: "route",
    routing: { lambda: 0.15, linkDepth: 12 },
  }),
  storedIndexMethod("c3m-gamma0", "C3M ablation: no page coverage gain (γ=0, λ=0.15)", {
    mode: "route",
    routing: { gamma: 0, lambda: 0.15, linkDepth: 12 },
  }),
  storedIndexMethod("c3m-lambda0", "C3M ablation: no evidence coverage (γ=0.2, λ=0)", {
    mode: "route",
    routing: { lambda: 0, linkDepth: 12 },
  }),
  ...maintenanceBaselines,
  storedIndexMethod(
    "cairn",
    "Cairn's default: candidates routed through the RAMU index plus the direct channels' hits, ranked by score fusion",
    {},
  ),
  ...pmmcMethods,
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
