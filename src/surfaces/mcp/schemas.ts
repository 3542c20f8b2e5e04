import { z } from "zod";

/**
 * Tool input schemas. They describe the shape for the model that calls the tools but stay lenient
 * where the SDK validates strictly (`Memory.addSession` parses the session again and names the
 * offending field), so a client gets Cairn's own typed message rather than a generic schema dump.
 */

const imageInput = z
  .object({
    data: z.string().optional().describe("The image file's bytes, base64-encoded (png, jpeg, webp or gif)"),
    mediaType: z.string().optional().describe("e.g. image/png; detected from the bytes when left out"),
    caption: z.string().optional().describe("What the image shows, in words, if known"),
    unavailable: z
      .string()
      .optional()
      .describe("For an image whose pixels are gone: what the source referenced (with a required caption)"),
  })
  .passthrough()
  .describe("One image: base64 `data` (local paths and URLs are not accepted over MCP)");

const turnInput = z
  .object({
    speaker: z.string().optional(),
    role: z.string().optional().describe("e.g. user or assistant"),
    text: z.string().optional(),
    time: z.string().optional().describe("RFC 3339 with an offset or Z; defaults to the session time"),
    uri: z.string().optional(),
    images: z.array(imageInput).optional(),
    metadata: z.record(z.unknown()).optional(),
  })
  .passthrough();

export const addSessionInput = {
  session: z
    .object({
      session: z.string().describe("Your id for the session, unique for this user"),
      time: z.string().describe("RFC 3339 start time of the session, with an offset or Z"),
      source: z.string().optional(),
      turns: z.array(turnInput).describe("The turns in order; each needs text or at least one image"),
    })
    .passthrough()
    .describe("One conversation session, as one line of Cairn's JSONL input"),
};

const base64Image = z.object({
  data: z.string().describe("The query image's bytes, base64-encoded"),
  mediaType: z.string().optional(),
});

export const searchInput = {
  text: z.string().optional().describe("What to look for, in words"),
  image: base64Image.optional().describe("A query image: finds similar stored images"),
  budget: z
    .object({
      rawNodes: z.number().int().min(0).optional().describe("Most raw nodes (turns) in the evidence"),
      images: z.number().int().min(0).optional().describe("Most original images in the evidence"),
      textTokens: z.number().int().min(0).optional().describe("Most text tokens in the evidence"),
    })
    .optional(),
  filters: z
    .object({
      sessions: z.array(z.string()).optional().describe("Only these session ids (your own keys)"),
      from: z.string().optional().describe("RFC 3339 earliest time, with an offset or Z"),
      to: z.string().optional().describe("RFC 3339 latest time, with an offset or Z"),
      speakers: z.array(z.string()).optional(),
    })
    .optional(),
  channels: z
    .array(z.enum(["bm25", "dense", "image"]))
    .optional()
    .describe("Retrieval channels to use (default all three)"),
  vision: z
    .boolean()
    .optional()
    .describe("Whether you can see images (default true); with false images come as their captions and OCR text"),
  images: z
    .enum(["original", "thumbnail", "none"])
    .optional()
    .describe("How evidence images come back as image content: original bytes (default), 256 px thumbnails, or not"),
};

export const getRawNodeInput = {
  id: z.string().describe("A raw node id from a search result"),
  images: z.enum(["original", "thumbnail", "none"]).optional().describe("Images as image content (default original)"),
};

export const forgetInput = {
  session: z.string().optional().describe("A session to forget: your session key or Cairn's session id"),
  rawNode: z.string().optional().describe("A single raw node (turn) to forget"),
};

export const listSessionsInput = {
  limit: z.number().int().min(1).max(1000).optional().describe("Default 50"),
  offset: z.number().int().min(0).optional(),
};

/** Structured results: the fields clients can rely on; the rest passes through as Cairn grows it. */
const provenance = z
  .object({
    sessionId: z.string(),
    sessionKey: z.string(),
    turn: z.number(),
    time: z.string(),
    speaker: z.string().nullable(),
  })
  .passthrough();

export const searchOutput = z
  .object({
    items: z.array(
      z
        .object({
          rawNodeId: z.string(),
          text: z.string(),
          images: z.array(z.object({ hash: z.string(), mediaType: z.string() }).passthrough()),
          provenance,
          score: z.number(),
        })
        .passthrough(),
    ),
    budget: z.object({}).passthrough(),
    warnings: z.array(z.string()),
  })
  .passthrough();

export const addSessionOutput = z
  .object({
    sessionId: z.string(),
    sessionKey: z.string(),
    rawNodeIds: z.array(z.string()),
    duplicate: z.boolean(),
    warnings: z.array(z.string()),
  })
  .passthrough();

export const forgetOutput = z
  .object({
    sessions: z.number(),
    rawNodes: z.number(),
    entries: z.number(),
    blobsDeleted: z.number(),
    auditId: z.string(),
  })
  .passthrough();
