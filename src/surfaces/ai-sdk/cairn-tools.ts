import { type ToolResultPart, tool } from "ai";
import { InputError } from "../../core/errors.ts";
import type { Scope } from "../../core/scope.ts";
import type { Budget } from "../../evidence/budget.ts";
import type { ImageInput } from "../../ingest/session-input.ts";
import type { Memory } from "../../memory.ts";
import type { RawNode } from "../../store/records.ts";
import { compactPack } from "../compact-pack.ts";
import { getImageToolInput, getRawNodeToolInput, rememberToolInput, searchToolInput } from "./schemas.ts";

export interface CairnToolsOptions {
  /**
   * Folder that `cairn_remember` reads image `path`s from (a path may not leave it). Without it the
   * model can send an image only as base64 `data` (or a `url`, when the memory allows remote images).
   */
  readonly imageFolder?: string;
  /** Groups this agent's notes under one key prefix (`remember/<conversation>/…`), as `Memory.remember`. */
  readonly conversation?: string;
  /** The search budget unless the model asks for another; default {@link agentSearchBudget}. */
  readonly budget?: Partial<Budget>;
  /** The notes' `source`; default `ai-sdk:remember`. */
  readonly source?: string;
}

/**
 * The default text budget of a tool search: MCP's, a few thousand tokens, so one search leaves a
 * chat model room for the rest of its context (the SDK default of 12,000 is for a reader with the pack alone).
 */
export const agentSearchBudget: Partial<Budget> = Object.freeze({ textTokens: 2_000 });

/**
 * Cairn's memory tools for an AI SDK agent, all acting on one scope (fixed by the app, never by the
 * model): `cairn_remember` (a note with optional images), `cairn_search` (an evidence pack: original
 * turns with provenance and image hashes), `cairn_get_raw_node` and `cairn_get_image` (original
 * pixels as image content). A Cairn error (bad input, unknown id) reaches the model as the tool's
 * error text and changes nothing.
 *
 * Chat Completions endpoints cannot carry images inside a tool result: pass `liftToolImages` as
 * `prepareStep` so the images reach the model as a user message instead.
 *
 * @example
 * const result = await generateText({
 *   model, tools: cairnTools(memory, { tenant: "acme", user: "ana" }), stopWhen: stepCountIs(5),
 *   prepareStep: ({ messages }) => ({ messages: liftToolImages(messages) }), prompt: "What bike do I ride?",
 * });
 */
export function cairnTools(memory: Memory, scope: Scope, options: CairnToolsOptions = {}) {
  return {
    cairn_remember: tool({
      description:
        "Stores one thing to remember in long-term memory: plain text, optionally with images. The time defaults " +
        "to now. Use it for facts, preferences and events worth recalling in later conversations.",
      inputSchema: rememberToolInput,
      execute: async ({ text, images, time, speaker }) =>
        memory.remember(scope, text, {
          images: (images ?? []).map((image, index) => imageInput(image, `images[${index}]`, options)),
          ...(options.imageFolder ? { baseDir: options.imageFolder } : {}),
          ...(options.conversation ? { conversation: options.conversation } : {}),
          ...(time ? { time } : {}),
          ...(speaker ? { speaker } : {}),
          source: options.source ?? "ai-sdk:remember",
        }),
    }),

    cairn_search: tool({
      description:
        "Finds evidence in long-term memory: the original turns with their provenance (time, speaker, session), " +
        "best first, and each turn's images by hash. Read a whole turn with cairn_get_raw_node (its rawNodeId) " +
        "and look at an image with cairn_get_image (its hash).",
      inputSchema: searchToolInput,
      execute: async ({ query, budget, filters }) => {
        const pack = await memory.search(
          scope,
          { text: query },
          { budget: { ...agentSearchBudget, ...options.budget, ...definedOnly(budget ?? {}) }, filters },
        );
        return compactPack(pack);
      },
    }),

    cairn_get_raw_node: tool({
      description: "One original turn by its rawNodeId, with its provenance and its images as image content.",
      inputSchema: getRawNodeToolInput,
      execute: async ({ id, images }) => {
        const node = await memory.getRawNode(scope, id);
        const mode = images ?? "original";
        const pixels =
          mode === "none"
            ? []
            : await Promise.all(
                node.images.flatMap((image) =>
                  image.hash ? [readImage(memory, scope, image.hash, mode === "thumbnail")] : [],
                ),
              );
        return { node, images: pixels };
      },
      toModelOutput: ({ output }) => imageContent(nodeText(output.node), output.images),
    }),

    cairn_get_image: tool({
      description: "The pixels of one stored image by the hash a search returned: the original, or a 256 px thumbnail.",
      inputSchema: getImageToolInput,
      execute: async ({ hash, size }) => readImage(memory, scope, hash, size === "thumbnail"),
      toModelOutput: ({ output }) =>
        imageContent(`image ${output.hash} (${output.mediaType}, ${output.size})`, [output]),
    }),
  };
}

/** One stored image as a tool returns it: base64 bytes with their media type. */
export interface ToolImage {
  readonly hash: string;
  readonly mediaType: string;
  readonly size: "original" | "thumbnail";
  /** The stored bytes, base64-encoded: the original file as it was remembered, or its WebP thumbnail. */
  readonly data: string;
}

async function readImage(memory: Memory, scope: Scope, hash: string, thumbnail: boolean): Promise<ToolImage> {
  const blob = await memory.getBlob(scope, hash, { thumbnail });
  return {
    hash,
    mediaType: blob.mediaType,
    size: thumbnail ? "thumbnail" : "original",
    data: Buffer.from(blob.data).toString("base64"),
  };
}

function imageContent(text: string, images: readonly ToolImage[]): ToolResultPart["output"] {
  return {
    type: "content",
    value: [
      { type: "text", text },
      ...images.map((image) => ({ type: "image-data" as const, data: image.data, mediaType: image.mediaType })),
    ],
  };
}

function nodeText(node: RawNode): string {
  return JSON.stringify(node, null, 2);
}

/** A model's image reference as Cairn's input: exactly one source, and a path only with an image folder. */
function imageInput(
  image: { path?: string; data?: string; url?: string; mediaType?: string; caption?: string },
  field: string,
  options: CairnToolsOptions,
): ImageInput {
  const sources = (["path", "data", "url"] as const).filter((name) => image[name] !== undefined);
  if (sources.length !== 1) throw new InputError(field, "give exactly one of path, data or url");
  const caption = image.caption ? { caption: image.caption } : {};
  if (image.path !== undefined) {
    if (!options.imageFolder) {
      throw new InputError(`${field}.path`, "this agent reads no image files; send the image as base64 data");
    }
    return { path: image.path, ...caption };
  }
  if (image.url !== undefined) return { url: image.url, ...caption };
  return { data: image.data as string, ...(image.mediaType ? { mediaType: image.mediaType } : {}), ...caption };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as Partial<T>;
}
