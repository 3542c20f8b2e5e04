import type { EvidencePack } from "../../evidence/evidence-pack.ts";
import type { SearchOptions } from "../../memory.ts";
import type { BenchMethod, Retrieval } from "../method.ts";

/** A method that is one configuration of `Memory.search`. */
export function searchMethod(
  name: string,
  description: string,
  options: Omit<SearchOptions, "budget"> & { readonly useQueryImage?: boolean },
): BenchMethod {
  const { useQueryImage = true, ...search } = options;
  return {
    name,
    description,
    async retrieve(context, question, queryImage) {
      const image = useQueryImage && queryImage ? { data: queryImage } : undefined;
      const pack = await context.memory.search(
        context.scope,
        { text: question.text, image },
        { ...search, budget: context.budget },
      );
      return fromPack(pack);
    },
  };
}

export function fromPack(
  pack: Pick<EvidencePack, "items" | "budget" | "warnings"> & {
    timings?: EvidencePack["timings"];
    route?: EvidencePack["route"];
  },
): Retrieval {
  const selected = pack.items.map((item) => item.rawNodeId);
  return {
    selected,
    candidates: [...selected, ...pack.budget.cutItems.map((cut) => cut.rawNodeId)],
    routed: pack.route !== undefined,
    imagesDelivered: pack.items
      .filter((item) => item.images.length + item.imagesAsText.length > 0)
      .map((item) => item.rawNodeId),
    textTokens: pack.budget.used.textTokens,
    images: pack.budget.used.images,
    warnings: pack.warnings,
    embedMs: pack.timings?.embedMs ?? 0,
  };
}
