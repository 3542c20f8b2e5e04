/**
 * Cairn for the Vercel AI SDK (`ai` 6, an optional peer dependency): memory tools for an agent and
 * evidence packs as prompt content. Its own entry point, so the core never loads `ai`.
 */
export type { CairnToolsOptions, ToolImage } from "./cairn-tools.ts";
export { agentSearchBudget, cairnTools } from "./cairn-tools.ts";
export { liftToolImages } from "./lift-tool-images.ts";
export type { DroppedEvidence, PackPrompt, PackToPromptOptions } from "./pack-to-prompt.ts";
export { packToPrompt } from "./pack-to-prompt.ts";
