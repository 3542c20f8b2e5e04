import { InputError } from "../core/errors.ts";
import type { MemoryOptions } from "../memory.ts";
import { plainIndexTextConfig } from "../store/index-text.ts";

/** The memory settings an ablation may change: what the replay writes with and what searches read with. */
export type AblationOptions = Pick<MemoryOptions, "indexText" | "search">;

/**
 * The evidence-quality levers of issue 19, each one switch that turns it off. Every lever is on by
 * default (its documented default in the engine's configuration); `cairn bench --ablate NAME` replays and
 * reads with that lever off, so its contribution is the difference from the default run.
 */
export const ablations: Readonly<Record<string, { readonly description: string; readonly options: AblationOptions }>> =
  Object.freeze({
    "context-text": {
      description: "raw nodes searchable by their own text only (no speaker, date, neighbours' gist, image text)",
      options: { indexText: plainIndexTextConfig },
    },
    neighbours: {
      description: "index text without the neighbouring turns' gist (speaker, date and image text kept)",
      options: { indexText: { neighbours: 0 } },
    },
  });

/** The options of the named ablations combined (later names win on the same setting). */
export function ablationOptions(names: readonly string[]): AblationOptions {
  let combined: AblationOptions = {};
  for (const name of names) {
    const ablation = ablations[name];
    if (!ablation) {
      throw new InputError("--ablate", `unknown lever ${name} (${Object.keys(ablations).join(", ")})`);
    }
    const { indexText, search } = ablation.options;
    combined = {
      ...combined,
      ...(indexText ? { indexText: { ...combined.indexText, ...indexText } } : {}),
      ...(search
        ? {
            search: {
              ...combined.search,
              ...search,
              routing: { ...combined.search?.routing, ...search.routing },
            },
          }
        : {}),
    };
  }
  return combined;
}
