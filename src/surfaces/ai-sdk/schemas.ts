import { z } from "zod";

/**
 * Tool inputs as the model sees them. Shapes only: Cairn validates every value again (lengths,
 * times, image bytes) and its typed error reaches the model as the tool's error text.
 */

const budget = z
  .object({
    rawNodes: z.number().int().min(0).optional().describe("Most turns in the evidence"),
    images: z.number().int().min(0).optional().describe("Most images in the evidence"),
    textTokens: z.number().int().min(0).optional().describe("Most text tokens in the evidence"),
  })
  .describe("Smaller than the defaults for a quick look; larger to read more");

export const rememberToolInput = z.object({
  text: z.string().describe("What to remember, in plain words; may be empty when an image says it all"),
  images: z
    .array(
      z.object({
        path: z.string().optional().describe("A file name relative to the app's image folder, when it has one"),
        data: z.string().optional().describe("The image file's bytes, base64-encoded (png, jpeg, webp or gif)"),
        url: z.string().optional().describe("An http(s) URL, when the app lets Cairn fetch images"),
        mediaType: z.string().optional().describe("e.g. image/png; detected from the bytes when left out"),
        caption: z.string().optional().describe("What the image shows, in words"),
      }),
    )
    .optional()
    .describe("Images to keep with the note, each by exactly one of path, data or url"),
  time: z.string().optional().describe("When it happened, RFC 3339 with an offset or Z; default now"),
  speaker: z.string().optional().describe("Who said or showed it (default user)"),
});

export const searchToolInput = z.object({
  query: z.string().min(1).describe("What to look for, in words"),
  budget: budget.optional(),
  filters: z
    .object({
      from: z.string().optional().describe("RFC 3339 earliest time, with an offset or Z"),
      to: z.string().optional().describe("RFC 3339 latest time, with an offset or Z"),
      speakers: z.array(z.string()).optional(),
      sessions: z.array(z.string()).optional().describe("Only these session keys"),
    })
    .optional(),
});

export const getRawNodeToolInput = z.object({
  id: z.string().min(1).describe("A rawNodeId from a search result"),
  images: z
    .enum(["original", "thumbnail", "none"])
    .optional()
    .describe("Attach the turn's images: originals (default), 256 px thumbnails, or none"),
});

export const getImageToolInput = z.object({
  hash: z.string().min(1).describe("The image's hash from a search result"),
  size: z.enum(["original", "thumbnail"]).optional().describe("Default original"),
});
