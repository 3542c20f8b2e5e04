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
  mode: z
    .enum(["cairn", "route", "tri-path", "compiled"])
    .optional()
    .describe(
      "How to read (default cairn); compiled runs a banked retrieval program when one matches the query, else cairn",
    ),
  vision: z
    .boolean()
    .optional()
    .describe("Whether you can see images (default true); with false images come as their captions and OCR text"),
  images: z
    .enum(["link", "original", "thumbnail", "none"])
    .optional()
    .describe(
      "How evidence images come back: resource links to the original and its thumbnail (default), image content " +
        "with the original bytes or 256 px thumbnails, or not at all",
    ),
  detail: z
    .enum(["compact", "full"])
    .optional()
    .describe("Structured result: compact (default) or the full evidence pack with its route trace and channel ranks"),
};

export const rememberInput = {
  text: z.string().optional().describe("What to remember, in plain words"),
  image: z
    .object({
      data: z.string().optional().describe("The image file's bytes, base64-encoded (png, jpeg, webp or gif)"),
      url: z.string().optional().describe("An http(s) URL, if this server fetches URLs"),
      path: z.string().optional().describe("A path relative to this server's image folder, if it has one"),
      mediaType: z.string().optional(),
      caption: z.string().optional().describe("What the image shows, in words"),
    })
    .optional()
    .describe("One image, by exactly one of data, url or path"),
  conversation: z
    .string()
    .optional()
    .describe("An id that groups memories of one conversation; without it memories group by day"),
  time: z.string().optional().describe("RFC 3339 time with an offset or Z; default now"),
  speaker: z.string().optional().describe("Who said or showed it (default user)"),
  role: z.string().optional().describe("e.g. user or assistant"),
};

export const rememberOutput = z
  .object({
    sessionId: z.string(),
    sessionKey: z.string(),
    rawNodeId: z.string(),
    time: z.string(),
    conversation: z.string().nullable(),
    duplicate: z.boolean(),
    warnings: z.array(z.string()),
  })
  .passthrough();

export const getImageInput = {
  hash: z.string().describe("The image's SHA-256 from a search result, or its cairn://blobs/… link"),
  size: z.enum(["original", "thumbnail"]).optional().describe("Default original"),
};

export const recallArguments = {
  topic: z.string().describe("A person, thing, place or event"),
};

export const getRawNodeInput = {
  id: z.string().describe("A raw node id from a search result"),
  images: z
    .enum(["original", "thumbnail", "link", "none"])
    .optional()
    .describe("Images as image content (default original), as links, or not"),
};

export const forgetInput = {
  session: z.string().optional().describe("A session to forget: your session key or Cairn's session id"),
  rawNode: z.string().optional().describe("A single raw node (turn) to forget"),
};

export const videoSearchInput = {
  query: z.string().min(1).max(2000).describe("What to look for, e.g. a person's name, an object, an activity"),
  level: z
    .enum(["observation", "trace", "chapter", "fact", "rule", "notification"])
    .optional()
    .describe(
      "observation: one entity in one segment; trace (default): one segment; chapter: a storyline of events; " +
        "fact: durable facts about entities (ranked with their importance); rule: the user's rules; " +
        "notification: the notifier's log",
    ),
  limit: z.number().int().min(1).max(50).optional().describe("Default 10"),
  entity: z.string().min(1).max(256).optional().describe("Only this entity's observations"),
};

export const videoRuleInput = {
  text: z
    .string()
    .min(1)
    .max(1000)
    .describe('The rule in words, e.g. "alert when fewer than 2 bottles remain", "tell me when Ana arrives"'),
  source: z.string().min(1).max(500).optional().describe("Only streams whose name starts with this"),
};

export const videoAnswerInput = {
  question: z.string().min(1).max(2000).describe("A question about what the watched streams showed"),
};

export const videoEntityInput = {
  id: z.string().min(1).max(256).describe("An entity id from cairn_video_entities"),
};

export const videoItemInput = {
  id: z.string().min(1).max(256).describe("An id from cairn_video_search or cairn_video_entities"),
  frames: z
    .enum(["none", "thumbnail", "original"])
    .optional()
    .describe("Attach the key frames and crops behind the item (default thumbnail)"),
};

export const listSessionsInput = {
  limit: z.number().int().min(1).max(1000).optional().describe("Default 50"),
  offset: z.number().int().min(0).optional(),
};

/** Structured results: the fields clients can rely on; the rest passes through as Cairn grows it. */
const provenance = z
  .object({
    sessionId: z.string().optional().describe("Cairn's session id (detail: full)"),
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
