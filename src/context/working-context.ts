import { countTokens } from "../core/tokens.ts";
import { type ImageTokenRule, imageTokens } from "./image-tokens.ts";

/** One content part of an OpenAI-compatible chat message. */
export type ContentPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image_url"; readonly image_url: { readonly url: string; readonly detail?: "low" | "high" } };

/** A message as an OpenAI-compatible chat completions API takes it. */
export interface ContextMessage {
  readonly role: "system" | "user" | "assistant" | "tool";
  readonly content: string | readonly ContentPart[];
  readonly name?: string;
  readonly tool_calls?: readonly {
    readonly id: string;
    readonly type: "function";
    readonly function: { readonly name: string; readonly arguments: string };
  }[];
  readonly tool_call_id?: string;
}

/** How a piece of the working context represents the history. */
export type ItemForm = "native" | "rendered" | "summary" | "pointer";

/** An image part with the size it was costed at (kept beside the message so cost needs no decoding). */
export interface CostedImage {
  readonly width: number;
  readonly height: number;
  readonly detail?: "low" | "high";
}

/** One message of the working context, with what it costs and which history messages it carries. */
export interface ContextItem {
  readonly message: ContextMessage;
  readonly form: ItemForm;
  /** History message ids this item represents (in full or in part). */
  readonly sources: readonly string[];
  /** Image ids (history images, or `<message>#table…`/`#chart…` artifacts) shown natively in this item. */
  readonly nativeImages: readonly string[];
  readonly images: readonly CostedImage[];
  readonly textTokens: number;
  readonly imageTokens: number;
}

/** Tokens a chat API adds around each message (role and separators), as OpenAI's counting guide does. */
export const messageOverheadTokens = 3;

/** Builds an item and costs it: text (o200k) of every text part, tool call and name, plus images by the rule. */
export function contextItem(
  message: ContextMessage,
  details: {
    readonly form: ItemForm;
    readonly sources: readonly string[];
    readonly nativeImages?: readonly string[];
    readonly images?: readonly CostedImage[];
  },
  rule: ImageTokenRule,
): ContextItem {
  const images = details.images ?? [];
  return {
    message,
    form: details.form,
    sources: details.sources,
    nativeImages: details.nativeImages ?? [],
    images,
    textTokens: messageTextTokens(message),
    imageTokens: images.reduce((sum, image) => sum + imageTokens(image, rule), 0),
  };
}

function messageTextTokens(message: ContextMessage): number {
  let tokens = messageOverheadTokens + (message.name ? countTokens(message.name) + 1 : 0);
  if (typeof message.content === "string") tokens += countTokens(message.content);
  else for (const part of message.content) if (part.type === "text") tokens += countTokens(part.text);
  for (const call of message.tool_calls ?? [])
    tokens += countTokens(call.function.name) + countTokens(call.function.arguments);
  return tokens;
}

export interface ContextCost {
  readonly textTokens: number;
  readonly imageTokens: number;
  readonly total: number;
  readonly images: number;
}

export function costOf(items: readonly ContextItem[]): ContextCost {
  let textTokens = 0;
  let imageTokensTotal = 0;
  let images = 0;
  for (const item of items) {
    textTokens += item.textTokens;
    imageTokensTotal += item.imageTokens;
    images += item.images.length;
  }
  return { textTokens, imageTokens: imageTokensTotal, total: textTokens + imageTokensTotal, images };
}

/** A PNG (or other image) as a data URL for an `image_url` part. */
export function dataUrl(data: Uint8Array, mediaType: string): string {
  return `data:${mediaType};base64,${Buffer.from(data).toString("base64")}`;
}

/** OpenAI accepts `name` only as `[A-Za-z0-9_-]{1,64}`; anything else is left to the text label. */
export function apiName(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  const cleaned = name.replace(/[^A-Za-z0-9_-]+/g, "_").slice(0, 64);
  return /[A-Za-z0-9]/.test(cleaned) ? cleaned : undefined;
}
