import { InputError } from "../../core/errors.ts";
import type { ContextManager, ManagerName } from "../context-manager.ts";
import { managerNames } from "../context-manager.ts";
import { discardAll, noCompression } from "./boundary-controls.ts";
import { slidingWindow } from "./sliding-window.ts";
import { summarisation } from "./summarisation.ts";
import { extractiveSummariser, type Summariser } from "./summariser.ts";
import { vera } from "./vera.ts";
import { visualRendering } from "./visual-rendering.ts";

export { chatSummariser, extractiveSummariser, type Summariser } from "./summariser.ts";

/** The six managers by name, with their defaults; `summariser` picks Summarisation's (extractive by default). */
export function managerNamed(name: string, options: { readonly summariser?: Summariser } = {}): ContextManager {
  switch (name as ManagerName) {
    case "none":
      return noCompression;
    case "discard-all":
      return discardAll;
    case "sliding-window":
      return slidingWindow();
    case "summarisation":
      return summarisation({ summariser: options.summariser ?? extractiveSummariser });
    case "visual-rendering":
      return visualRendering();
    case "vera":
      return vera();
    default:
      throw new InputError("manager", `unknown context manager "${name}"; expected ${managerNames.join(", ")}`);
  }
}
