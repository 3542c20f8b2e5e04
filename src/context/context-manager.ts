import type { ImageTokenRule } from "./image-tokens.ts";
import type { RenderSettings } from "./render/page-layout.ts";
import type { Renderer } from "./render/renderer.ts";
import type { TrajectoryMessage } from "./trajectory.ts";
import type { ContextItem } from "./working-context.ts";

export const managerNames = [
  "none",
  "discard-all",
  "sliding-window",
  "summarisation",
  "visual-rendering",
  "vera",
] as const;
export type ManagerName = (typeof managerNames)[number];

/**
 * The working context's budget, in tokens (text + image). Below `trigger` the history goes through as it is;
 * above it the manager transforms everything but the `keepRecent` newest messages, and the result must cost at
 * most `window` (VERA's setting: a 128k window, managed from 64k).
 */
export interface ContextBudget {
  readonly window: number;
  readonly trigger: number;
  /** Newest messages always kept in their original form. */
  readonly keepRecent: number;
  /**
   * Most of the trigger a manager's representation of the older history may fill (0.5), so the working context
   * lands well below the trigger and the agent runs a while before the next management step.
   */
  readonly managedShare: number;
}

export const defaultContextBudget: ContextBudget = Object.freeze({
  window: 128_000,
  trigger: 64_000,
  keepRecent: 8,
  managedShare: 0.5,
});

/** What a manager took out of the working context (the orchestrator writes it to the cold store). */
export interface DroppedContent {
  readonly messageId: string;
  /** `message`: all of it; `tool-result`: its content; `images`: its pixels (words may remain); `partial`: some text. */
  readonly what: "message" | "tool-result" | "images" | "partial";
  readonly imageIds: readonly string[];
}

/** What the manager of the previous trigger produced, for managers that build on it (recursive summaries). */
export interface ManagerState {
  readonly summary?: { readonly text: string; readonly covers: readonly string[] };
}

export interface ManageRequest {
  /** The managed history: every message older than the recent ones, in order. */
  readonly messages: readonly TrajectoryMessage[];
  /** Tokens the managed history's representation may cost at most. */
  readonly allowance: number;
  readonly budget: ContextBudget;
  readonly imageRule: ImageTokenRule;
  readonly render: RenderSettings;
  readonly renderer: Renderer;
  readonly previous?: ManagerState;
}

export interface ManagedHistory {
  readonly items: readonly ContextItem[];
  readonly dropped: readonly DroppedContent[];
  readonly warnings: readonly string[];
  readonly state?: ManagerState;
}

/**
 * Turns the managed part of a history into working-context items. `boundary-control` managers (pass-through
 * and reset) bracket the comparison; a `manager` must return something non-empty and cheaper than the raw history.
 */
export interface ContextManager {
  readonly name: ManagerName;
  readonly role: "boundary-control" | "manager";
  manage(request: ManageRequest): Promise<ManagedHistory>;
}
