import { createHash } from "node:crypto";
import type { ContextBudget, ContextManager, ManagerState } from "../../context/context-manager.ts";
import type { ImageTokenRule } from "../../context/image-tokens.ts";
import { buildWorkingContext } from "../../context/manage-context.ts";
import { nativeItems } from "../../context/native-items.ts";
import type { RenderSettings } from "../../context/render/page-layout.ts";
import { Renderer } from "../../context/render/renderer.ts";
import { type LedgerTotals, TokenLedger } from "../../context/token-ledger.ts";
import type { TrajectoryMessage } from "../../context/trajectory.ts";
import type { ContextItem } from "../../context/working-context.ts";
import { contentWords } from "../../core/text.ts";
import { countTokens } from "../../core/tokens.ts";
import type { ImageReader } from "../../models/provider.ts";
import { type AnswerAssessment, type AnswerSummary, summariseAnswers } from "../answer/answer-judge.ts";
import type { ContextAnswerJudge } from "./context-answer.ts";
import type { ReplayTrajectory } from "./dataset-trajectory.ts";

/**
 * A gold turn counts as present in summary text or OCR'd page text when at least this share of its content words
 * is found together, within a stretch of that text no longer than `presentWindow` times the turn's own count of
 * content words (a paraphrase-free, model-free proxy: what a reader could still quote). Words scattered over a
 * whole summary or over ten pages are not the turn: a bag-of-words test over all of it (the first version) let a
 * 4,000-token summary "hold" 0.89 of LoCoMo's gold turns at the 8k trigger.
 */
export const presentShare = 0.5;
export const presentWindow = 2;

export interface ReplayOptions {
  readonly budget: ContextBudget;
  readonly imageRule: ImageTokenRule;
  readonly render: RenderSettings;
  /** Reads rendered pages back; without it, a turn on a kept page counts as rendered (legibility unmeasured). */
  readonly ocr?: ImageReader;
  /** With a chat endpoint: answers every question from the working context at its time and judges it (part c). */
  readonly answer?: ContextAnswerJudge;
}

export interface RetentionResult {
  readonly dataset: string;
  readonly manager: string;
  readonly role: ContextManager["role"];
  readonly messages: number;
  readonly tokens: LedgerTotals;
  /**
   * Non-cache tokens spent before the manager first ran (all of them when it never did). Every manager spends the
   * same up to there, so this share of No Compression's total is a floor no manager can go under on this trajectory.
   */
  readonly nonCacheBeforeFirstTrigger: number;
  readonly triggers: number;
  readonly meanContextTokens: number;
  readonly maxContextTokens: number;
  readonly callsOverWindow: number;
  /** Questions with at least one gold turn found in the trajectory. */
  readonly turnQuestions: number;
  /** Mean share of a question's gold turns present in the working context at its time, in any form. */
  readonly turnRetention: number;
  /** ...as native text (original messages, or the summary holding ≥ presentShare of the turn's words). */
  readonly turnAsText: number;
  /** ...on a kept rendered page (when `ocr` was given: OCR reads back ≥ presentShare of its words). */
  readonly turnAsRendered: number;
  readonly ocrVerified: boolean;
  readonly imageQuestions: number;
  /** Mean share of a question's gold images present as native images. */
  readonly imageNative: number;
  readonly pagesRead: number;
  /** Answer accuracy from the working context, when `answer` was given. */
  readonly answers?: AnswerSummary;
}

/**
 * Replays a trajectory through one manager as an agent would meet it: the working context grows message by message,
 * the manager runs whenever it passes the trigger, and every assistant message is one model call (input: the
 * working context before it; output: the message). At each checkpoint the working context is inspected for the
 * checkpoint questions' gold evidence.
 */
export async function replayRetention(
  replay: ReplayTrajectory,
  manager: ContextManager,
  options: ReplayOptions,
): Promise<RetentionResult> {
  const { trajectory } = replay;
  const messages = trajectory.messages;
  const renderer = new Renderer();
  const nativeCache = new Map<string, ContextItem[]>();
  const native = { imageRule: options.imageRule, render: options.render, renderer };
  const costOfMessage = async (message: TrajectoryMessage) => {
    let items = nativeCache.get(message.id);
    if (items === undefined) {
      items = await nativeItems(message, native);
      nativeCache.set(message.id, items);
    }
    return items.reduce((sum, item) => sum + item.textTokens + item.imageTokens, 0);
  };
  let head: ContextItem[] = [];
  let headCost = 0;
  let boundary = 0;
  let tailCost = 0;
  let state: ManagerState | undefined;
  let triggers = 0;
  const ledger = new TokenLedger();
  let beforeFirstTrigger: number | undefined;
  let contextSum = 0;
  let maxContext = 0;
  let overWindow = 0;

  const manageAt = async (end: number) => {
    const result = await buildWorkingContext(
      { id: trajectory.id, messages: messages.slice(0, end) },
      {
        manager,
        budget: options.budget,
        imageRule: options.imageRule,
        render: options.render,
        renderer,
        nativeCache,
        force: true,
        ...(state ? { previous: state } : {}),
      },
    );
    head = result.items.slice(0, result.recentItemsFrom);
    headCost = head.reduce((sum, item) => sum + item.textTokens + item.imageTokens, 0);
    boundary = result.recentFrom;
    tailCost = 0;
    for (const message of messages.slice(boundary, end)) tailCost += await costOfMessage(message);
    state = result.state;
    triggers++;
  };

  const checkpoints = [...replay.checkpoints].sort((a, b) => a.after - b.after);
  let nextCheckpoint = 0;
  const perQuestion: { turn?: { any: number; text: number; rendered: number }; image?: number }[] = [];
  const ocrCache = new Map<string, readonly string[]>();
  let pagesRead = 0;
  const assessments: AnswerAssessment[] = [];

  for (let index = 0; index <= messages.length; index++) {
    // The context before message `index` holds messages [0, index).
    if (manager.name !== "none" && headCost + tailCost > options.budget.trigger) {
      beforeFirstTrigger ??= ledger.totals.nonCache;
      await manageAt(index);
    }
    const message = messages[index];
    if (message?.role === "assistant") {
      const input = headCost + tailCost;
      ledger.record({ input, cachedInput: 0, output: countTokens(message.text) });
      contextSum += input;
      maxContext = Math.max(maxContext, input);
      if (input > options.budget.window) overWindow++;
    }
    while (nextCheckpoint < checkpoints.length && (checkpoints[nextCheckpoint]?.after ?? 0) < index) {
      const checkpoint = checkpoints[nextCheckpoint++];
      if (checkpoint === undefined) break;
      const items = [...head];
      for (const recent of messages.slice(boundary, index)) items.push(...(nativeCache.get(recent.id) ?? []));
      const view = await inspect(items, options, ocrCache, () => pagesRead++);
      for (const question of checkpoint.questions) {
        if (options.answer)
          assessments.push(
            await options.answer.assess(
              items.map((item) => item.message),
              question,
            ),
          );
        const scored: (typeof perQuestion)[number] = {};
        const goldTurns = question.gold.turns
          .map((turn) => replay.turnMessages.get(`${checkpoint.history}|${turn}`) ?? [])
          .filter((ids) => ids.length > 0);
        if (goldTurns.length > 0) {
          let any = 0;
          let text = 0;
          let rendered = 0;
          for (const ids of goldTurns) {
            const forms = await Promise.all(ids.map((id) => view.presence(messageById(messages, id))));
            if (forms.some((form) => form.text)) text++;
            if (forms.some((form) => form.rendered)) rendered++;
            if (forms.some((form) => form.text || form.rendered)) any++;
          }
          scored.turn = {
            any: any / goldTurns.length,
            text: text / goldTurns.length,
            rendered: rendered / goldTurns.length,
          };
        }
        const goldImages = question.gold.images.flatMap(
          (image) => replay.imageIds.get(`${checkpoint.history}|${image}`) ?? [],
        );
        if (goldImages.length > 0)
          scored.image = goldImages.filter((id) => view.nativeImages.has(id)).length / goldImages.length;
        perQuestion.push(scored);
      }
    }
    if (message !== undefined) tailCost += await costOfMessage(message);
  }
  const turns = perQuestion.flatMap((entry) => (entry.turn ? [entry.turn] : []));
  const images = perQuestion.flatMap((entry) => (entry.image === undefined ? [] : [entry.image]));
  const mean = (values: readonly number[]) =>
    values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;
  return {
    dataset: trajectory.id,
    manager: manager.name,
    role: manager.role,
    messages: messages.length,
    tokens: ledger.totals,
    nonCacheBeforeFirstTrigger: beforeFirstTrigger ?? ledger.totals.nonCache,
    triggers,
    meanContextTokens: Math.round(contextSum / Math.max(1, ledger.totals.calls)),
    maxContextTokens: maxContext,
    callsOverWindow: overWindow,
    turnQuestions: turns.length,
    turnRetention: mean(turns.map((turn) => turn.any)),
    turnAsText: mean(turns.map((turn) => turn.text)),
    turnAsRendered: mean(turns.map((turn) => turn.rendered)),
    ocrVerified: options.ocr !== undefined,
    imageQuestions: images.length,
    imageNative: mean(images),
    pagesRead,
    ...(options.answer ? { answers: summariseAnswers(assessments).overall } : {}),
  };
}

function messageById(messages: readonly TrajectoryMessage[], id: string): TrajectoryMessage | undefined {
  // Ids are `<history>/<session>/<turn>`: a linear scan is fine at checkpoint time, but index once per call site.
  return messages.find((message) => message.id === id);
}

interface ContextView {
  readonly nativeImages: ReadonlySet<string>;
  presence(message: TrajectoryMessage | undefined): Promise<{ text: boolean; rendered: boolean }>;
}

/** What a working context holds: native messages, summary words, OCR'd (or merely rendered) page words, native images. */
async function inspect(
  items: readonly ContextItem[],
  options: ReplayOptions,
  ocrCache: Map<string, readonly string[]>,
  onPage: () => void,
): Promise<ContextView> {
  const nativeIds = new Set<string>();
  const nativeImages = new Set<string>();
  const summaryWords: string[] = [];
  const renderedIds = new Set<string>();
  const pageImages: string[] = [];
  const pageWidth = Math.round(options.render.pageWidth * options.render.scale);
  const pageHeight = Math.round(options.render.pageHeight * options.render.scale);
  for (const item of items) {
    for (const id of item.nativeImages) nativeImages.add(id);
    if (item.form === "native") for (const id of item.sources) nativeIds.add(id);
    const content = item.message.content;
    if (item.form === "summary" && typeof content === "string") {
      summaryWords.push(...contentWords(content));
    }
    if (item.form !== "rendered" || typeof content === "string") continue;
    for (const id of item.sources) renderedIds.add(id);
    let imageIndex = 0;
    for (const part of content) {
      if (part.type !== "image_url") continue;
      const size = item.images[imageIndex++];
      if (size?.width === pageWidth && size.height === pageHeight) pageImages.push(part.image_url.url);
    }
  }
  // Pages are read only when a gold turn sits on one: most checkpoints need no OCR at all.
  let pageWords: Promise<string[]> | undefined;
  const readPages = (ocr: ImageReader) => {
    pageWords ??= (async () => {
      // Pages in order, so a turn broken across two pages is still found together.
      const words: string[] = [];
      for (const url of pageImages) {
        const key = createHash("sha256").update(url).digest("hex");
        let read = ocrCache.get(key);
        if (read === undefined) {
          read = contentWords(await ocr.readImage(Buffer.from(url.slice(url.indexOf(",") + 1), "base64")));
          ocrCache.set(key, read);
          onPage();
        }
        words.push(...read);
      }
      return words;
    })();
    return pageWords;
  };
  const share = (message: TrajectoryMessage, words: readonly string[]) => {
    const wanted = [...new Set(contentWords(message.text))];
    if (wanted.length === 0) return false;
    return quotedShare(wanted, words, presentWindow * wanted.length) >= presentShare;
  };
  return {
    nativeImages,
    async presence(message) {
      if (message === undefined) return { text: false, rendered: false };
      const text = nativeIds.has(message.id) || (summaryWords.length > 0 && share(message, summaryWords));
      if (!renderedIds.has(message.id)) return { text, rendered: false };
      if (options.ocr === undefined || contentWords(message.text).length === 0) return { text, rendered: true };
      return { text, rendered: share(message, await readPages(options.ocr)) };
    },
  };
}

/**
 * The largest share of `wanted` (distinct words) found within any `window` consecutive words of `sequence`.
 *
 * @example quotedShare(["red", "kayak"], ["a", "red", "kayak"], 4) // 1
 */
export function quotedShare(wanted: readonly string[], sequence: readonly string[], window: number): number {
  if (wanted.length === 0) return 0;
  const want = new Set(wanted);
  const inWindow = new Map<string, number>();
  let best = 0;
  const size = Math.max(1, window);
  for (let end = 0; end < sequence.length; end++) {
    const added = sequence[end] ?? "";
    if (want.has(added)) inWindow.set(added, (inWindow.get(added) ?? 0) + 1);
    const leaving = sequence[end - size];
    if (leaving !== undefined && want.has(leaving)) {
      const count = (inWindow.get(leaving) ?? 0) - 1;
      if (count > 0) inWindow.set(leaving, count);
      else inWindow.delete(leaving);
    }
    best = Math.max(best, inWindow.size);
  }
  return best / want.size;
}
