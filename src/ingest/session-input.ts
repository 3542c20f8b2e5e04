import { z } from "zod";
import { InputError } from "../core/errors.ts";
import { parseRfc3339, rfc3339Reason } from "../core/time.ts";
import { checkInputValues } from "./input-values.ts";
import type { IngestLimits } from "./limits.ts";

/**
 * One image of a turn: a file (relative to the input folder), inline bytes, a URL, or a
 * caption-only image whose pixels are unavailable (`unavailable` says what the source referenced).
 */
export type ImageInput =
  | { readonly path: string; readonly caption?: string }
  | { readonly data: Uint8Array | string; readonly mediaType?: string; readonly caption?: string }
  | { readonly url: string; readonly caption?: string }
  | { readonly unavailable: string; readonly caption: string };

export interface TurnInput {
  readonly speaker?: string;
  readonly role?: string;
  readonly text?: string;
  /** RFC 3339 with an offset or `Z`; defaults to the session time. */
  readonly time?: string;
  readonly uri?: string;
  readonly images?: readonly ImageInput[];
  readonly metadata?: Record<string, unknown>;
}

export interface SessionInput {
  /** The caller's session id, unique within a scope. */
  readonly session: string;
  /** RFC 3339 start time of the session, with an offset or `Z`. */
  readonly time: string;
  readonly source?: string;
  readonly turns: readonly TurnInput[];
}

/** An image that comes with its pixels. */
export type PixelImageInput = Exclude<ImageInput, { readonly unavailable: string }>;

/*
 * Field caps of the session schema: bounds on untrusted input, generous next to real values; set
 * with the schema (af873f5, 041474e), not measured.
 */
/** A caption is a paragraph at most; longer text belongs in the turn's text. */
const maxCaptionChars = 4_000;
/** A URL, or what an unavailable image referenced. */
const maxReferenceChars = 2_000;
/** A speaker is a name. */
const maxSpeakerChars = 200;
/** A role is a short label (user, assistant, tool). */
const maxRoleChars = 64;
/** A session id or source is a key or a short label. */
const maxKeyChars = 256;

const isoTime = z.string().refine((value) => parseRfc3339(value) !== null, rfc3339Reason);
const caption = z.string().max(maxCaptionChars).optional();
const imageSchema = z.union([
  z.object({ path: z.string().min(1), caption }).strict(),
  z
    .object({ data: z.union([z.string().min(1), z.instanceof(Uint8Array)]), mediaType: z.string().optional(), caption })
    .strict(),
  z.object({ url: z.string().url(), caption }).strict(),
  z
    .object({
      unavailable: z.string().min(1).max(maxReferenceChars),
      caption: z.string().trim().min(1).max(maxCaptionChars),
    })
    .strict(),
]);

function sessionSchema(limits: IngestLimits) {
  const turn = z
    .object({
      speaker: z.string().min(1).max(maxSpeakerChars).optional(),
      role: z.string().min(1).max(maxRoleChars).optional(),
      text: z.string().max(limits.maxTextChars, `must be at most ${limits.maxTextChars} characters`).optional(),
      time: isoTime.optional(),
      uri: z.string().max(maxReferenceChars).optional(),
      images: z.array(imageSchema).max(limits.maxImagesPerTurn).optional(),
      metadata: z.record(z.unknown()).optional(),
    })
    .strict()
    .refine((value) => (value.text?.trim() ?? "") !== "" || (value.images?.length ?? 0) > 0, {
      message: "a turn needs non-empty text or at least one image",
    });
  return z
    .object({
      session: z.string().min(1).max(maxKeyChars),
      time: isoTime,
      source: z.string().max(maxKeyChars).optional(),
      turns: z.array(turn).min(1, "a session needs at least one turn").max(limits.maxTurnsPerSession),
    })
    .strict();
}

/** Validates a session from untrusted input; the error names the first offending field. */
export function parseSessionInput(value: unknown, limits: IngestLimits, location = ""): SessionInput {
  checkInputValues(value, limits, location);
  const result = sessionSchema(limits).safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue?.path.map((part) => (typeof part === "number" ? `[${part}]` : `.${part}`)).join("") ?? "";
  const field = `${location}${path.replace(/^\./, "") || "session"}`;
  throw new InputError(field, issue?.message ?? "invalid session");
}
