import { z } from "zod";
import { InputError } from "../../core/errors.ts";
import { parseRfc3339, rfc3339Reason } from "../../core/time.ts";

/**
 * Request and response shapes of the REST API. The same schemas validate requests and make the
 * OpenAPI document. They check shape; the SDK still applies the store's limits (text length,
 * image size and format, turns per session), so those stay defined in one place.
 */

const isoTime = z
  .string()
  .refine((value) => parseRfc3339(value) !== null, rfc3339Reason)
  .describe("RFC 3339 time with an offset or Z, e.g. 2024-05-08T13:56:00Z");

export const imageInput = z
  .object({
    data: z.string().min(1).optional().describe("the image bytes, base64"),
    file: z.string().min(1).optional().describe("multipart uploads: the name of the file part holding the image"),
    url: z.string().url().optional().describe("fetched only when the server runs with --allow-remote-images"),
    unavailable: z.string().min(1).optional().describe("a caption-only image: what the source referenced"),
    path: z
      .never({ message: "local image paths are refused over HTTP: send base64 data or a multipart file part" })
      .optional()
      .describe("refused over HTTP"),
    mediaType: z.string().optional(),
    caption: z.string().optional(),
  })
  .strict()
  .refine(
    (image) =>
      [image.data, image.file, image.url, image.unavailable].filter((value) => value !== undefined).length === 1,
    { message: "an image has exactly one of data (base64), file (multipart part), url or unavailable" },
  )
  .describe("One image of a turn. Local `path` images are refused over HTTP.");

const turnInput = z
  .object({
    speaker: z.string().optional(),
    role: z.string().optional(),
    text: z.string().optional(),
    time: isoTime.optional(),
    uri: z.string().optional(),
    images: z.array(imageInput).optional(),
    metadata: z.record(z.unknown()).optional(),
  })
  .strict();

export const sessionBody = z
  .object({
    session: z.string().min(1).describe("the caller's session id, unique within the scope"),
    time: isoTime,
    source: z.string().optional(),
    user: z.string().optional().describe("optional; must equal the request's user (from the key or X-Cairn-User)"),
    turns: z.array(turnInput).min(1),
  })
  .strict();
export type SessionBody = z.infer<typeof sessionBody>;

export const multipartSessionBody = z.object({
  session: z.string().describe("the session JSON; images reference file parts as { file: <part name> }"),
});

export const searchBody = z
  .object({
    text: z.string().optional(),
    image: z
      .object({ data: z.string().min(1).describe("base64"), mediaType: z.string().optional() })
      .strict()
      .optional(),
    mode: z
      .enum(["cairn", "route", "tri-path"])
      .optional()
      .describe(
        "cairn (default): the active index and the direct channels; route: the index only; tri-path: direct channels only",
      ),
    routing: z
      .object({
        gamma: z.number().min(0).max(10).optional().describe("page coverage weight"),
        lambda: z.number().min(0).max(10).optional().describe("evidence coverage weight"),
        entries: z.number().int().min(1).max(1000).optional(),
        linked: z.number().int().min(0).max(1000).optional(),
        window: z.number().int().min(0).max(100).optional(),
        fusion: z.enum(["rrf", "sum"]).optional(),
      })
      .strict()
      .optional(),
    budget: z
      .object({
        pages: z.number().int().nonnegative().optional().describe("index pages routing may read"),
        rawNodes: z.number().int().nonnegative().optional(),
        images: z.number().int().nonnegative().optional(),
        textTokens: z.number().int().nonnegative().optional(),
      })
      .strict()
      .optional(),
    filters: z
      .object({
        sessions: z.array(z.string()).optional().describe("session keys"),
        from: isoTime.optional(),
        to: isoTime.optional(),
        speakers: z.array(z.string()).optional(),
      })
      .strict()
      .optional(),
    channels: z
      .array(z.enum(["bm25", "dense", "image", "route"]))
      .min(1)
      .optional(),
    vision: z.boolean().optional().describe("false: images arrive as captions and OCR text"),
  })
  .strict()
  .refine((body) => (body.text?.trim() ?? "") !== "" || body.image !== undefined, {
    message: "give query text, a query image, or both",
  });

export const forgetBody = z.union([
  z.object({ session: z.string().min(1).describe("session key") }).strict(),
  z.object({ rawNode: z.string().min(1) }).strict(),
  z.object({ all: z.literal(true) }).strict(),
]);

export const pageQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).optional(),
    offset: z.coerce.number().int().min(0).optional(),
  })
  .strict();

export const idParam = z.object({ id: z.string().min(1).max(256) });
export const hashParam = z.object({ hash: z.string().regex(/^[0-9a-f]{64}$/, "a blob hash is 64 hex characters") });

// Responses: documented for clients, not re-validated (the SDK's types are the source).
const sessionRecord = z
  .object({
    id: z.string(),
    key: z.string(),
    time: z.string(),
    source: z.string().nullable(),
    turnCount: z.number(),
    imageCount: z.number(),
    contentHash: z.string(),
    createdAt: z.string(),
  })
  .passthrough();

const imageRef = z
  .object({
    ordinal: z.number(),
    hash: z.string().nullable(),
    mediaType: z.string().nullable(),
    bytes: z.number().nullable(),
    width: z.number().nullable(),
    height: z.number().nullable(),
    caption: z.string().nullable(),
    derivedText: z.string().nullable(),
    origin: z.string().nullable(),
  })
  .passthrough();

export const rawNode = z
  .object({
    id: z.string(),
    sessionId: z.string(),
    sessionKey: z.string(),
    turn: z.number(),
    speaker: z.string().nullable(),
    role: z.string().nullable(),
    text: z.string(),
    time: z.string(),
    source: z.string().nullable(),
    uri: z.string().nullable(),
    images: z.array(imageRef),
    metadata: z.record(z.unknown()),
  })
  .passthrough();

export const responses = {
  health: z.object({ status: z.literal("ok"), version: z.string(), store: z.string() }),
  addSession: z
    .object({
      sessionId: z.string(),
      sessionKey: z.string(),
      rawNodeIds: z.array(z.string()),
      entryIds: z.array(z.string()).describe("index entries this session created or changed"),
      duplicate: z.boolean(),
      warnings: z.array(z.string()),
    })
    .passthrough(),
  sessions: z.object({ sessions: z.array(sessionRecord) }),
  session: z.object({ session: sessionRecord, rawNodes: z.array(rawNode) }),
  rawNode,
  evidencePack: z
    .object({
      query: z.object({ text: z.string().nullable(), image: z.object({ hash: z.string() }).nullable() }),
      items: z.array(z.object({ rawNodeId: z.string(), text: z.string() }).passthrough()),
      budget: z.record(z.unknown()),
      channelsUsed: z.array(z.string()),
      warnings: z.array(z.string()),
      timings: z.record(z.number()),
    })
    .passthrough()
    .describe("Evidence pack: original turns and images with provenance, channel ranks and budget use"),
  entries: z
    .object({ entries: z.array(z.object({ id: z.string(), routingText: z.string() }).passthrough()) })
    .describe("Entry fields grow over time: clients render unknown fields generically"),
  audit: z.object({
    events: z.array(
      z.object({
        id: z.string(),
        time: z.string(),
        action: z.string(),
        subject: z.string(),
        details: z.record(z.unknown()),
      }),
    ),
  }),
  stats: z.object({
    sessions: z.number(),
    rawNodes: z.number(),
    images: z.number(),
    entries: z.number(),
    auditEvents: z.number(),
  }),
  forget: z.object({
    sessions: z.number(),
    rawNodes: z.number(),
    entries: z.number(),
    blobsDeleted: z.number(),
    auditId: z.string(),
  }),
  error: z.object({
    error: z.object({ code: z.string(), message: z.string(), field: z.string().optional() }),
  }),
};

/** Parses untrusted input; the first issue becomes an `InputError` naming its field. */
export function parseWith<T extends z.ZodTypeAny>(schema: T, value: unknown, location: string): z.infer<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue?.path.map((part) => (typeof part === "number" ? `[${part}]` : `.${part}`)).join("") ?? "";
  throw new InputError(`${location}${path}`, issue?.message ?? "invalid");
}
