import { InputError, InvariantError } from "../core/errors.ts";
import type { Scope } from "../core/scope.ts";
import { fitTokens } from "../core/tokens.ts";
import {
  type ContextBudget,
  type ContextManager,
  type DroppedContent,
  defaultContextBudget,
  type ManagerName,
  type ManagerState,
} from "./context-manager.ts";
import {
  droppedMessages,
  type EvictionPointer,
  type EvictionStore,
  memoryEvictionStore,
  type SessionWriter,
} from "./eviction.ts";
import { defaultImageTokenRule, type ImageTokenRule } from "./image-tokens.ts";
import { managerNamed } from "./managers/index.ts";
import { nativeItems } from "./native-items.ts";
import { defaultRenderSettings, type RenderSettings } from "./render/page-layout.ts";
import { Renderer } from "./render/renderer.ts";
import type { Trajectory, TrajectoryMessage } from "./trajectory.ts";
import { loadTrajectory } from "./trajectory-input.ts";
import { type ContextCost, type ContextItem, type ContextMessage, contextItem, costOf } from "./working-context.ts";

export interface ManageContextOptions {
  /** A manager or its name (`vera` by default). */
  readonly manager?: ContextManager | ManagerName;
  readonly budget?: Partial<ContextBudget>;
  readonly imageRule?: ImageTokenRule;
  readonly render?: Partial<RenderSettings>;
  /** Shared between calls to reuse drawn pages. */
  readonly renderer?: Renderer;
  /** Where dropped content is written (`memoryEvictionStore(memory, scope)`); without it, a warning says it was not kept. */
  readonly evict?: EvictionStore;
  /** Message ids already written to the eviction store by an earlier call (a replay passes them on). */
  readonly alreadyEvicted?: ReadonlySet<string>;
  /** The state the same manager returned at the previous trigger (recursive summaries build on it). */
  readonly previous?: ManagerState;
  /** Manage even when the history is below the trigger. */
  readonly force?: boolean;
  /** Native items by message id, reused across calls on a growing history (a replay passes one map). */
  readonly nativeCache?: Map<string, ContextItem[]>;
}

export interface WorkingContext {
  readonly manager: ManagerName;
  /**
   * The manager's declared role, demoted to `boundary-control` for this call when it returned nothing for the
   * managed history or a context not cheaper than the raw history (VERA's criterion for a genuine manager).
   */
  readonly role: ContextManager["role"];
  /** Whether the trigger was reached and the manager ran. */
  readonly managed: boolean;
  /** The working context, ready for an OpenAI-compatible chat API. */
  readonly messages: readonly ContextMessage[];
  readonly items: readonly ContextItem[];
  readonly cost: ContextCost;
  /** What the history would cost unmanaged. */
  readonly rawCost: ContextCost;
  readonly budget: ContextBudget;
  /** Whether `cost.total ≤ budget.window`; only No Compression can be false. */
  readonly fits: boolean;
  /** Index of the first message kept in its original form. */
  readonly recentFrom: number;
  /** Index of the first item of the recent part in `items` (before it: system, pointer, managed history). */
  readonly recentItemsFrom: number;
  readonly dropped: readonly DroppedContent[];
  /** Where the dropped messages went, when an eviction store was given and something was dropped. */
  readonly evicted?: EvictionPointer;
  readonly state?: ManagerState;
  readonly warnings: readonly string[];
}

/** Tokens kept free for the eviction pointer message. */
const pointerReserve = 120;

/**
 * Turns a trajectory into a bounded working context. Below the trigger the history passes unchanged; above it
 * the manager transforms all but the recent messages (leading system messages always stay), what it drops is
 * written to the eviction store, and a pointer to it leads the managed history.
 *
 * @example const context = await buildWorkingContext(trajectory, { manager: "vera", evict: memoryEvictionStore(memory, scope) });
 */
export async function buildWorkingContext(
  trajectory: Trajectory,
  options: ManageContextOptions = {},
): Promise<WorkingContext> {
  const manager = typeof options.manager === "object" ? options.manager : managerNamed(options.manager ?? "vera");
  const budget = Object.freeze({ ...defaultContextBudget, ...options.budget });
  checkBudget(budget);
  const imageRule = options.imageRule ?? defaultImageTokenRule;
  const render = Object.freeze({ ...defaultRenderSettings, ...options.render });
  const renderer = options.renderer ?? new Renderer();
  const native = { imageRule, render, renderer };
  const messages = trajectory.messages;
  const nativeOf = options.nativeCache ?? new Map<string, ContextItem[]>();
  for (const message of messages)
    if (!nativeOf.has(message.id)) nativeOf.set(message.id, await nativeItems(message, native));
  const all = messages.flatMap((message) => nativeOf.get(message.id) ?? []);
  const rawCost = costOf(all);
  const warnings: string[] = [];
  const base = { manager: manager.name, role: manager.role, rawCost, budget };
  if (!options.force && rawCost.total <= budget.trigger) {
    return {
      ...base,
      managed: false,
      messages: all.map((item) => item.message),
      items: all,
      cost: rawCost,
      fits: rawCost.total <= budget.window,
      recentFrom: 0,
      recentItemsFrom: 0,
      dropped: [],
      warnings,
    };
  }
  let systemCount = 0;
  while (messages[systemCount]?.role === "system") systemCount++;
  const systemItems = messages.slice(0, systemCount).flatMap((message) => nativeOf.get(message.id) ?? []);
  let recentFrom = Math.max(systemCount, messages.length - budget.keepRecent);
  // A tool result stays with the call it answers: the recent part never starts on one.
  while (recentFrom > systemCount && messages[recentFrom]?.role === "tool") recentFrom--;
  const recentCost = (from: number) =>
    costOf(messages.slice(from).flatMap((message) => nativeOf.get(message.id) ?? [])).total;
  const fixedCost = costOf(systemItems).total;
  // Recent messages that do not fit beside the system prompt move into the managed history.
  while (recentFrom < messages.length - 1 && fixedCost + recentCost(recentFrom) + pointerReserve > budget.window) {
    recentFrom++;
    while (recentFrom < messages.length - 1 && messages[recentFrom]?.role === "tool") recentFrom++;
  }
  let recentItems = messages.slice(recentFrom).flatMap((message) => nativeOf.get(message.id) ?? []);
  const lastOnly = fixedCost + costOf(recentItems).total + pointerReserve > budget.window;
  const extraDropped: DroppedContent[] = [];
  if (lastOnly && manager.name !== "none") {
    const last = messages[messages.length - 1];
    if (last !== undefined) {
      recentItems = [cutToFit(last, budget.window - fixedCost - pointerReserve, imageRule)];
      extraDropped.push({ messageId: last.id, what: "partial", imageIds: last.images.map((image) => image.id) });
      warnings.push(`message ${last.id} alone exceeds the window: its text was cut and its images left out`);
    }
  }
  const managedMessages = messages.slice(systemCount, recentFrom);
  let allowance = Math.min(
    budget.window - fixedCost - costOf(recentItems).total - pointerReserve,
    Math.floor(budget.trigger * budget.managedShare),
  );
  const manage = (within: number) =>
    manager.manage({
      messages: managedMessages,
      allowance: within,
      budget,
      imageRule,
      render,
      renderer,
      ...(options.previous ? { previous: options.previous } : {}),
    });
  let result = await manage(allowance);
  for (
    let attempt = 0;
    manager.role === "manager" && costOf(result.items).total > allowance && attempt < 3;
    attempt++
  ) {
    // A manager's own estimate of its header text ran over; ask again for less.
    allowance -= costOf(result.items).total - allowance;
    result = await manage(allowance);
  }
  if (manager.role === "manager" && costOf(result.items).total > Math.max(0, allowance)) {
    throw new InvariantError(
      "context-budget",
      `${manager.name} returned ${costOf(result.items).total} tokens for an allowance of ${allowance}`,
    );
  }
  warnings.push(...result.warnings);
  const dropped = [...result.dropped, ...extraDropped];
  const toEvict = droppedMessages(messages, dropped).filter((message) => !options.alreadyEvicted?.has(message.id));
  let evicted: EvictionPointer | undefined;
  const pointerItems: ContextItem[] = [];
  if (dropped.length > 0) {
    if (options.evict !== undefined && toEvict.length > 0) evicted = await options.evict.store(trajectory.id, toEvict);
    else if (options.evict === undefined) warnings.push("dropped content was not kept: no eviction store was given");
    const text =
      options.evict !== undefined
        ? `[context note: ${dropped.length} parts of ${new Set(dropped.map((entry) => entry.messageId)).size} earlier messages are not shown in full; their original content is in memory (one session per message, keyed ${evicted?.prefix ?? `context:${trajectory.id}:`}<message id>); search memory to recall them]`
        : `[context note: ${new Set(dropped.map((entry) => entry.messageId)).size} earlier messages are not shown in full and were not kept]`;
    pointerItems.push(contextItem({ role: "user", content: text }, { form: "pointer", sources: [] }, imageRule));
  }
  const items = [...systemItems, ...pointerItems, ...result.items, ...recentItems];
  const cost = costOf(items);
  let role = manager.role;
  if (role === "manager" && (result.items.length === 0 || cost.total >= rawCost.total)) {
    role = "boundary-control";
    warnings.push(
      result.items.length === 0
        ? `${manager.name} kept nothing of the managed history: a boundary control here, not a manager`
        : `${manager.name} is not cheaper than the raw history (${cost.total} ≥ ${rawCost.total} tokens): a boundary control here`,
    );
  }
  if (manager.name !== "none" && cost.total > budget.window) {
    throw new InvariantError(
      "context-budget",
      `${manager.name} produced ${cost.total} tokens for a window of ${budget.window}`,
    );
  }
  if (cost.total > budget.window)
    warnings.push(`the working context costs ${cost.total} tokens, over the window of ${budget.window}`);
  return {
    ...base,
    role,
    managed: true,
    messages: items.map((item) => item.message),
    items,
    cost,
    fits: cost.total <= budget.window,
    recentFrom,
    recentItemsFrom: items.length - recentItems.length,
    dropped,
    ...(evicted ? { evicted } : {}),
    ...(result.state ? { state: result.state } : {}),
    warnings,
  };
}

function cutToFit(message: TrajectoryMessage, tokens: number, rule: ImageTokenRule): ContextItem {
  const text = fitTokens(message.text, Math.max(0, tokens - 20)).text;
  const content = `${text}\n[cut to fit the window]`;
  const role = message.role === "tool" ? "tool" : message.role;
  return contextItem(
    role === "tool" ? { role, content, tool_call_id: message.toolCallId ?? "" } : { role, content },
    { form: "native", sources: [message.id] },
    rule,
  );
}

function checkBudget(budget: ContextBudget): void {
  const whole = (value: number) => Number.isInteger(value) && value >= 0;
  if (!whole(budget.window) || budget.window < 1_000)
    throw new InvalidBudget("window", "a whole number of tokens, at least 1000");
  if (!whole(budget.trigger) || budget.trigger > budget.window)
    throw new InvalidBudget("trigger", "a whole number of tokens, at most the window");
  if (!whole(budget.keepRecent)) throw new InvalidBudget("keepRecent", "a whole number of messages");
  if (!(budget.managedShare > 0 && budget.managedShare <= 1))
    throw new InvalidBudget("managedShare", "a share above 0, at most 1");
}

class InvalidBudget extends InputError {
  constructor(field: string, reason: string) {
    super(`budget.${field}`, `must be ${reason}`);
  }
}

export interface ManageContextCallOptions extends ManageContextOptions {
  /** With `scope`: dropped content is written to this memory (cold store) and the context points at it. */
  readonly memory?: SessionWriter;
  readonly scope?: Scope;
  /** Id of a raw trajectory (messages); it names the eviction sessions. */
  readonly trajectoryId?: string;
  /** Folder relative image paths of raw messages are read from; without it, paths are refused. */
  readonly baseDir?: string;
}

/**
 * The SDK entry point: a trajectory (or raw messages, validated) in, a bounded working context in OpenAI chat
 * format out, with its cost, what was dropped and where that went.
 *
 * @example
 * const context = await manageContext(messages, { manager: "vera", budget: { window: 128_000, trigger: 64_000 }, memory, scope });
 * await openai.chat.completions.create({ model, messages: context.messages });
 */
export async function manageContext(
  trajectory: Trajectory | readonly unknown[],
  options: ManageContextCallOptions = {},
): Promise<WorkingContext> {
  const loaded = Array.isArray(trajectory)
    ? await loadTrajectory(trajectory, {
        ...(options.trajectoryId ? { id: options.trajectoryId } : {}),
        ...(options.baseDir ? { baseDir: options.baseDir } : {}),
      })
    : (trajectory as Trajectory);
  if ((options.memory === undefined) !== (options.scope === undefined)) {
    throw new InputError("memory", "memory and scope go together: eviction needs both");
  }
  const evict =
    options.evict ?? (options.memory && options.scope ? memoryEvictionStore(options.memory, options.scope) : undefined);
  return buildWorkingContext(loaded, { ...options, ...(evict ? { evict } : {}) });
}
