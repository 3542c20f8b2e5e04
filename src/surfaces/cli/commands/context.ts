import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { managerNames } from "../../../context/context-manager.ts";
import { memoryEvictionStore } from "../../../context/eviction.ts";
import { imageTokenRuleNamed } from "../../../context/image-tokens.ts";
import { buildWorkingContext, type WorkingContext } from "../../../context/manage-context.ts";
import { managerNamed } from "../../../context/managers/index.ts";
import { chatSummariser } from "../../../context/managers/summariser.ts";
import { loadTrajectory } from "../../../context/trajectory-input.ts";
import { InputError } from "../../../core/errors.ts";
import { createEndpointChat } from "../../../models/profiles.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";
import { readJsonl } from "../jsonl.ts";
import { positiveInteger } from "./search.ts";

export const contextHelp = `cairn context trajectory.jsonl --out DIR [--manager ${managerNames.join("|")}] (default vera)
  [--budget TOKENS] (window, 128000) [--trigger TOKENS] (half the window) [--keep-recent N] (8)
  [--scale S] (0.75) [--image-tokens openai-tile|patch|area] [--summariser chat] [--no-evict]
  one message per line ({role, text|content, name, images, artifacts, toolCalls, toolCallId});
  writes DIR/messages.json (OpenAI chat format), DIR/report.json and DIR/image-NN.png; dropped messages go to the store`;

export interface ContextFlags {
  readonly out?: string;
  readonly manager?: string;
  readonly budget?: string;
  readonly trigger?: string;
  readonly keepRecent?: string;
  readonly scale?: string;
  readonly imageTokens?: string;
  readonly summariser?: string;
  readonly noEvict?: boolean;
}

export async function contextCommand(
  options: CommonOptions,
  file: string | undefined,
  flags: ContextFlags,
): Promise<number> {
  if (!file) throw new InputError("trajectory", `give a trajectory file: ${contextHelp.split("\n")[0]}`);
  if (!flags.out) throw new InputError("--out", "give the folder to write the working context to");
  const window = flags.budget === undefined ? 128_000 : positiveInteger("--budget", flags.budget);
  const trigger = flags.trigger === undefined ? Math.floor(window / 2) : positiveInteger("--trigger", flags.trigger);
  const keepRecent = flags.keepRecent === undefined ? 8 : positiveInteger("--keep-recent", flags.keepRecent);
  const scale = flags.scale === undefined ? 0.75 : Number(flags.scale);
  if (!(scale >= 0.25 && scale <= 2)) throw new InputError("--scale", "must be a number from 0.25 to 2");
  const imageRule = imageTokenRuleNamed(flags.imageTokens ?? "openai-tile", "--image-tokens");
  if (flags.summariser !== undefined && flags.summariser !== "chat" && flags.summariser !== "extractive") {
    throw new InputError("--summariser", "must be extractive (default) or chat");
  }
  const chat = flags.summariser === "chat" ? await createEndpointChat("CAIRN_OPENAI_CHAT_MODEL") : undefined;
  const manager = managerNamed(flags.manager ?? "vera", chat ? { summariser: chatSummariser(chat.chat) } : {});
  const records = await readJsonl(file);
  const trajectory = await loadTrajectory(
    records.map((record) => record.value),
    { id: path.basename(file).replace(/\.jsonl?$/i, ""), baseDir: path.dirname(path.resolve(file)) },
  );
  // The scope is checked before the store is opened: a missing --tenant must not leave a store behind.
  const scope = flags.noEvict ? undefined : scopeOf(options);
  const memory = scope === undefined ? undefined : await openMemory(options);
  let context: WorkingContext;
  try {
    context = await buildWorkingContext(trajectory, {
      manager,
      budget: { window, trigger, keepRecent },
      imageRule,
      render: { scale },
      ...(memory && scope ? { evict: memoryEvictionStore(memory, scope) } : {}),
    });
  } finally {
    await memory?.close();
    await chat?.close();
  }
  const written = await writeContext(flags.out, context);
  const report = summaryOf(context, written);
  output(options, report, () =>
    [
      `${context.manager} (${context.role}): ${context.managed ? "managed" : "below the trigger, unchanged"}`,
      `cost ${context.cost.total} tokens (text ${context.cost.textTokens}, images ${context.cost.imageTokens} in ${context.cost.images}) of ${window}; raw history ${context.rawCost.total}`,
      `dropped ${report.droppedMessages} messages${context.evicted ? `, kept in memory as ${context.evicted.prefix}<message id> (${context.evicted.written} new)` : ""}`,
      ...context.warnings.map((warning) => `warning: ${warning}`),
      `wrote ${written.length + 2} files to ${flags.out}`,
    ].join("\n"),
  );
  return 0;
}

/** messages.json as sent; each image also as a file, so rendered pages can be looked at. */
async function writeContext(out: string, context: WorkingContext): Promise<string[]> {
  await mkdir(out, { recursive: true });
  const files: string[] = [];
  for (const message of context.messages) {
    if (typeof message.content === "string") continue;
    for (const part of message.content) {
      if (part.type !== "image_url") continue;
      const match = /^data:image\/(\w+);base64,(.*)$/s.exec(part.image_url.url);
      if (!match) continue;
      const name = `image-${String(files.length + 1).padStart(2, "0")}.${match[1] === "jpeg" ? "jpg" : match[1]}`;
      await writeFile(path.join(out, name), Buffer.from(match[2] ?? "", "base64"));
      files.push(name);
    }
  }
  await writeFile(path.join(out, "messages.json"), `${JSON.stringify(context.messages)}\n`);
  return files;
}

function summaryOf(context: WorkingContext, images: readonly string[]) {
  return {
    manager: context.manager,
    role: context.role,
    managed: context.managed,
    fits: context.fits,
    cost: context.cost,
    rawCost: context.rawCost,
    budget: context.budget,
    recentFrom: context.recentFrom,
    droppedMessages: new Set(context.dropped.map((entry) => entry.messageId)).size,
    dropped: context.dropped,
    ...(context.evicted ? { evicted: context.evicted } : {}),
    items: context.items.map((item) => ({
      form: item.form,
      sources: item.sources,
      nativeImages: item.nativeImages,
      textTokens: item.textTokens,
      imageTokens: item.imageTokens,
    })),
    images,
    warnings: context.warnings,
  };
}
