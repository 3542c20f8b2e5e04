import { z } from "zod";
import { InputError } from "../../core/errors.ts";
import { parseRfc3339, rfc3339Reason } from "../../core/time.ts";
import type { EvidencePack } from "../../evidence/evidence-pack.ts";
import type { AddSessionResult } from "../../memory-options.ts";
import type { ForgetResult, RawNode, ScopeStats, SessionRecord } from "../../store/records.ts";
import type { Knowledge } from "./knowledge.ts";

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

export const turnInput = z
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

/** Sessions one batch request may carry: all are held in memory until their one commit. */
export const maxBatchSessions = 256;

export const sessionBatchBody = z
  .object({
    sessions: z
      .array(sessionBody)
      .min(1)
      .max(maxBatchSessions)
      .describe("sessions of this request's scope, planned in this order and committed together"),
  })
  .strict();

export const appendTurnsBody = z
  .object({
    time: isoTime.optional().describe("stamps turns that carry no time of their own; default: now"),
    source: z.string().optional(),
    turns: z.array(turnInput).min(1),
    partKey: z
      .string()
      .regex(/^\S{1,256}$/)
      .optional()
      .describe(
        "names this append: a key the session already has makes the call a duplicate (a retry); default: the turns' hash",
      ),
  })
  .strict();

export const rememberBody = z
  .object({
    text: z.string().max(100_000).optional().describe("what to remember, in plain words"),
    images: z.array(imageInput).max(8).optional(),
    conversation: z.string().optional().describe("groups notes: remember/<conversation>/<day>/<n>"),
    time: isoTime.optional().describe("default: now"),
    speaker: z.string().optional(),
    role: z.string().optional(),
  })
  .strict();

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
      .enum(["cairn", "route", "tri-path", "compiled"])
      .optional()
      .describe(
        "cairn (default): the active index and the direct channels; route: the index only; tri-path: direct channels only; compiled: a banked program when one matches (PMMC), else cairn",
      ),
    routing: z
      .object({
        gamma: z.number().min(0).max(10).optional().describe("page coverage weight"),
        lambda: z.number().min(0).max(10).optional().describe("evidence coverage weight"),
        entries: z.number().int().min(1).max(1000).optional(),
        linked: z.number().int().min(0).max(1000).optional(),
        linkDepth: z
          .number()
          .int()
          .min(0)
          .max(64)
          .optional()
          .describe("levels of overflow and earlier-state links followed from a chosen entry"),
        window: z.number().int().min(0).max(100).optional(),
        fusion: z.enum(["rrf", "sum"]).optional(),
        order: z
          .enum(["relevance", "latest-first"])
          .optional()
          .describe("relevance (default): latest state first only within a version chain's positions"),
        imageWeight: z
          .number()
          .min(0)
          .max(10)
          .optional()
          .describe("image channel weight for a question that does not ask about something seen"),
        sessionWeight: z.number().min(0).max(10).optional().describe("weight of a candidate's session score"),
        timeWeight: z
          .number()
          .min(0)
          .max(10)
          .optional()
          .describe("boost for evidence dated in a time the question names"),
        timeSlackDays: z.number().min(0).max(366).optional().describe("days a named time window's end is stretched"),
        speakerWeight: z
          .number()
          .min(0)
          .max(10)
          .optional()
          .describe("boost for evidence said by a speaker the question names"),
        feedbackWeight: z
          .number()
          .min(0)
          .max(10)
          .optional()
          .describe("weight of a second lexical pass seeded by the first pass's best items (0: none)"),
        feedbackFor: z.enum(["several", "all"]).optional().describe("questions that get the second pass"),
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
    minScore: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe(
        "leave out evidence holding less than this share of the query's content words (default 0, which keeps all; 0.2 asks for one content word of a short question); noRelevantEvidence says when nothing is left",
      ),
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

export const videoFactsQuery = z
  .object({
    entity: z.string().min(1).max(256).optional().describe("only this entity's facts"),
    source: z.string().min(1).max(500).optional().describe("only this source's scene facts"),
  })
  .strict();

export const videoRuleBody = z
  .object({
    text: z
      .string()
      .min(1)
      .max(1000)
      .describe('the rule in words: "alert when fewer than 2 bottles remain", "tell me when Ana arrives"'),
    source: z.string().min(1).max(500).optional().describe("only streams whose name starts with this"),
  })
  .strict();

export const videoNotificationsQuery = z
  .object({
    stream: z.string().min(1).max(500).optional(),
    rule: z.string().min(1).max(256).optional(),
    outcome: z.enum(["send", "suppressed", "cleared"]).optional(),
    limit: z.coerce.number().int().min(1).max(10_000).optional(),
  })
  .strict();

export const videoMomentsQuery = z
  .object({
    stream: z.string().min(1).max(500).optional(),
    limit: z.coerce.number().int().min(1).max(500).optional(),
  })
  .strict();

export const videoAnswerBody = z
  .object({
    question: z.string().min(1).max(2000),
    levels: z.array(z.enum(["observation", "trace", "chapter", "fact", "rule", "notification"])).optional(),
  })
  .strict();

export const videoSearchQuery = z
  .object({
    q: z.string().min(1).max(2000).describe("what to look for"),
    level: z
      .enum(["observation", "trace", "chapter", "fact", "rule", "notification"])
      .optional()
      .describe("the memory level (default trace): episodic, semantic facts, rules or the notification log"),
    limit: z.coerce.number().int().min(1).max(100).optional(),
    stream: z.string().min(1).max(512).optional(),
    entity: z.string().min(1).max(256).optional(),
  })
  .strict();
export const hashParam = z.object({ hash: z.string().regex(/^[0-9a-f]{64}$/, "a blob hash is 64 hex characters") });

// Responses: documented for clients, not re-validated (the SDK's types are the source; the type
// assertions at the end of this file fail to compile when a schema asks for what the SDK lacks, and
// test/http/openapi.test.ts checks live answers against the document).
const sessionRecord = z
  .object({
    id: z.string(),
    key: z.string().describe("the caller's own session id"),
    time: z.string(),
    source: z.string().nullable(),
    turnCount: z.number().int(),
    imageCount: z.number().int(),
    contentHash: z.string(),
    createdAt: z.string(),
  })
  .strict();

const imageRef = z
  .object({
    ordinal: z.number().int(),
    hash: z.string().nullable().describe("SHA-256 of the original bytes; null for an image whose pixels are gone"),
    mediaType: z.string().nullable(),
    bytes: z.number().int().nullable(),
    width: z.number().int().nullable(),
    height: z.number().int().nullable(),
    caption: z.string().nullable(),
    derivedText: z.string().nullable().describe("text read from the image (OCR)"),
    origin: z.string().nullable().describe("where the image came from (a path, URL or reference), if known"),
  })
  .strict();

export const rawNode = z
  .object({
    id: z.string(),
    sessionId: z.string(),
    sessionKey: z.string(),
    turn: z.number().int(),
    speaker: z.string().nullable(),
    role: z.string().nullable(),
    text: z.string(),
    time: z.string(),
    source: z.string().nullable(),
    uri: z.string().nullable(),
    images: z.array(imageRef),
    metadata: z.record(z.string(), z.unknown()).describe("the caller's own metadata of the turn, as sent"),
  })
  .strict();

const channelName = z.enum(["bm25", "dense", "image", "imageText", "imageTextDense", "imageVector", "route"]);
const channelHit = z
  .object({ rank: z.number().int().describe("1-based rank in the channel"), score: z.number() })
  .strict();
const budgetDimension = z.enum(["pages", "rawNodes", "images", "textTokens"]);
const budget = z
  .object({
    pages: z.number().int().describe("index pages routing may read"),
    rawNodes: z.number().int(),
    images: z.number().int(),
    textTokens: z.number().int(),
  })
  .strict()
  .describe("One number per budget dimension");

const provenance = z
  .object({
    sessionId: z.string(),
    sessionKey: z.string(),
    turn: z.number().int(),
    time: z.string(),
    speaker: z.string().nullable(),
    role: z.string().nullable(),
    source: z.string().nullable(),
    uri: z.string().nullable(),
  })
  .strict()
  .describe("Where an evidence item comes from: its session, turn, time, speaker and source");

const evidenceImage = z
  .object({
    hash: z.string(),
    mediaType: z.string(),
    bytes: z.number().int(),
    width: z.number().int(),
    height: z.number().int(),
    caption: z.string().nullable(),
    derivedText: z.string().nullable(),
    thumbnail: z.object({ hash: z.string(), mediaType: z.literal("image/webp") }).strict(),
  })
  .strict();

const imageAsText = z
  .object({
    hash: z.string().nullable(),
    caption: z.string().nullable(),
    derivedText: z.string().nullable(),
    origin: z.string().nullable(),
  })
  .strict();

const routeVia = z.enum(["entry", "overflow", "earlier-state", "neighbour"]);

const evidenceItem = z
  .object({
    rawNodeId: z.string(),
    text: z.string(),
    images: z.array(evidenceImage).describe("original images in the pack (GET /v1/blobs/{hash})"),
    imagesAsText: z.array(imageAsText).describe("images handed over as text: no pixels, or a reader without vision"),
    imagesCut: z.number().int().describe("images of this raw node left out by the image budget"),
    provenance,
    score: z.number(),
    channels: z
      .object({
        bm25: channelHit.optional(),
        dense: channelHit.optional(),
        image: channelHit.optional(),
        imageText: channelHit.optional(),
        imageTextDense: channelHit.optional(),
        imageVector: channelHit.optional(),
        route: channelHit.optional(),
      })
      .strict()
      .describe("each channel's rank and score for this raw node"),
    relevance: z
      .number()
      .nullable()
      .optional()
      .describe("share (0-1) of the query's content words this evidence holds; null for an image-only query"),
    textTokens: z.number().int(),
    route: z
      .object({ entry: z.string(), via: routeVia, latest: z.boolean() })
      .strict()
      .optional()
      .describe("how routing reached this raw node, when it did"),
  })
  .strict();

const budgetUse = z
  .object({
    limits: budget,
    used: budget,
    cut: budget.describe("candidates left out, per dimension"),
    cutItems: z.array(z.object({ rawNodeId: z.string(), dimension: budgetDimension }).strict()),
  })
  .strict();

const routeTrace = z
  .object({
    pages: z.array(
      z
        .object({
          page: z.number().int(),
          entries: z.number().int(),
          similarity: z.number(),
          coverageGain: z.number(),
          score: z.number(),
          read: z.boolean(),
        })
        .strict(),
    ),
    entries: z.array(
      z
        .object({
          id: z.string(),
          page: z.number().int().nullable(),
          status: z.string(),
          score: z.number(),
          via: routeVia,
          chosen: z.boolean(),
        })
        .strict(),
    ),
    expanded: z.number().int().describe("raw nodes the chosen entries expanded to"),
    config: z
      .object({
        gamma: z.number(),
        lambda: z.number(),
        entries: z.number().int(),
        linked: z.number().int(),
        linkDepth: z.number().int(),
        window: z.number().int(),
        fusion: z.enum(["rrf", "sum"]),
        order: z.enum(["relevance", "latest-first"]),
        imageWeight: z.number(),
        sessionWeight: z.number(),
        timeWeight: z.number(),
        timeSlackDays: z.number(),
        speakerWeight: z.number(),
        feedbackWeight: z.number(),
        feedbackFor: z.enum(["several", "all"]),
        pageBeam: z.number().int(),
      })
      .strict(),
    selected: z.number().int().describe("raw nodes that made it into the pack"),
  })
  .strict()
  .describe("Routing's trace: pages scored and read, entries chosen and reached through links");

const compiledTrace = z
  .object({
    ran: z.boolean(),
    program: z
      .object({
        id: z.string(),
        question: z.string(),
        kind: z.string(),
        score: z.number(),
        margin: z.number(),
      })
      .strict()
      .nullable()
      .describe("the best bank match: the program that ran, or the one that missed the gate"),
    reason: z.string().nullable().describe("why the default search answered instead"),
    fallback: z.enum(["cairn", "route", "tri-path", "compiled"]).nullable(),
    steps: z.array(z.object({ id: z.string(), op: z.string(), nodes: z.number().int() }).strict()),
    gate: z.object({ alphaRoute: z.number(), margin: z.number() }).strict(),
    candidates: z
      .array(z.object({ id: z.string(), score: z.number() }).strict())
      .describe("the best bank matches, at most 5, best first"),
    bankSize: z.number().int(),
    matchMs: z.number(),
    executeMs: z.number(),
  })
  .strict()
  .describe("A compiled search's trace: which banked program ran, or why it fell back");

const evidencePack = z
  .object({
    query: z
      .object({ text: z.string().nullable(), image: z.object({ hash: z.string() }).strict().nullable() })
      .strict(),
    items: z.array(evidenceItem),
    budget: budgetUse,
    channelsUsed: z.array(channelName),
    mode: z.enum(["cairn", "route", "tri-path", "compiled"]),
    route: routeTrace.optional().describe("absent for tri-path"),
    compiled: compiledTrace.optional().describe("present for compiled"),
    noRelevantEvidence: z
      .boolean()
      .describe("true when nothing relevant was found: nothing retrieved, or nothing reached minScore"),
    relevance: z
      .object({ minScore: z.number(), best: z.number().nullable(), cut: z.number().int() })
      .strict()
      .optional()
      .describe("the relevance cut of a text query: threshold, best candidate's score, candidates cut"),
    warnings: z.array(z.string()),
    timings: z.object({ embedMs: z.number(), searchMs: z.number(), totalMs: z.number() }).strict(),
  })
  .strict()
  .describe("Evidence pack: original turns and images with provenance, channel ranks, budget use and the route trace");

/** Every code an error body can carry (Cairn's typed errors and the HTTP layer's own). */
export const errorCodes = [
  "input",
  "not_found",
  "conflict",
  "store",
  "provider",
  "config",
  "invariant",
  "internal",
  "unauthorized",
  "forbidden",
  "host_not_allowed",
  "origin_not_allowed",
  "too_large",
  "unsupported_media_type",
  "no_route",
  "not_installed",
] as const;

const knownTurn = z
  .object({
    rawNodeId: z.string(),
    sessionId: z.string(),
    sessionKey: z.string(),
    turn: z.number().int(),
    time: z.string(),
    speaker: z.string().nullable(),
    text: z.string(),
    images: z.array(
      z
        .object({
          hash: z.string().nullable(),
          mediaType: z.string().nullable(),
          caption: z.string().nullable(),
          derivedText: z.string().nullable(),
        })
        .strict(),
    ),
  })
  .strict()
  .describe("One turn as it was said, with its images");

const knownVersion = {
  entryId: z.string(),
  timeStart: z.string(),
  timeEnd: z.string(),
  said: z.array(knownTurn).describe("the turns this memory rests on, oldest first"),
  moreTurns: z.number().int().describe("turns beyond those shown (the session view has them all)"),
};

const knownMemory = z
  .object({
    ...knownVersion,
    topics: z.array(z.string()),
    sessions: z.array(z.string()).describe("session keys"),
    replaced: z
      .array(z.object(knownVersion).strict())
      .describe("earlier versions this memory replaced (a later state updated them), newest first"),
    alsoHolds: z.number().int().describe("entries folded into this one when the index was full"),
  })
  .strict()
  .describe("One active index entry in the words that were said");

const jsonRpcId = z.union([z.string(), z.number().int()]);

const addSessionResult = z
  .object({
    sessionId: z.string(),
    sessionKey: z.string(),
    rawNodeIds: z.array(z.string()),
    entryIds: z.array(z.string()).describe("index entries this session created or changed"),
    maintenance: z
      .object({ actions: z.array(z.string()), overflowRepairs: z.number().int() })
      .strict()
      .describe("what maintenance did: one index action per segment, and capacity fallbacks taken"),
    duplicate: z.boolean(),
    warnings: z.array(z.string()),
  })
  .strict();

export const responses = {
  health: z.object({ status: z.literal("ok"), version: z.string(), store: z.string() }).strict(),
  addSession: addSessionResult,
  addSessions: z.object({ results: z.array(addSessionResult) }).strict(),
  remember: z
    .object({
      sessionId: z.string(),
      sessionKey: z.string().describe("remember/<conversation or day>/<YYYY-MM-DD>/<n>"),
      rawNodeId: z.string(),
      time: z.string(),
      conversation: z.string().nullable(),
      duplicate: z.boolean(),
      warnings: z.array(z.string()),
    })
    .strict(),
  sessionRecord,
  sessions: z.object({ sessions: z.array(sessionRecord) }).strict(),
  session: z.object({ session: sessionRecord, rawNodes: z.array(rawNode) }).strict(),
  imageRef,
  rawNode,
  provenance,
  evidenceImage,
  imageAsText,
  channelHit,
  evidenceItem,
  budget,
  budgetUse,
  routeTrace,
  evidencePack,
  knownTurn,
  knownMemory,
  knowledge: z
    .object({ memories: z.array(knownMemory), total: z.number().int() })
    .strict()
    .describe("What Cairn knows about this scope's user: active memories, newest first"),
  users: z
    .object({
      tenantWide: z.boolean().describe("false for a key bound to one user: the list then holds that user alone"),
      users: z.array(
        z.object({ user: z.string(), agent: z.string().nullable().describe("null for the user's own scope") }).strict(),
      ),
    })
    .strict()
    .describe("The tenant's users (and their agents) holding memory, in order"),
  entries: z
    .object({ entries: z.array(z.object({ id: z.string(), routingText: z.string() }).passthrough()) })
    .strict()
    .describe("Entry fields grow over time: clients render unknown fields generically"),
  audit: z
    .object({
      events: z.array(
        z
          .object({
            id: z.string(),
            time: z.string(),
            action: z.string(),
            subject: z.string(),
            details: z.record(z.string(), z.unknown()).describe("the action's inputs and result; shape per action"),
          })
          .strict(),
      ),
    })
    .strict(),
  videoEntities: z
    .object({
      entities: z.array(
        z
          .object({
            id: z.string(),
            name: z.string().nullable(),
            status: z.string(),
            observations: z.number().int(),
            sightings: z.array(
              z
                .object({ stream: z.string(), from: z.string(), to: z.string(), observations: z.number().int() })
                .passthrough(),
            ),
          })
          .passthrough(),
      ),
    })
    .strict()
    .describe("Entities seen in watched video (or enrolled), with their sightings per stream"),
  videoHits: z
    .object({
      hits: z.array(
        z
          .object({
            score: z.number(),
            item: z.object({ id: z.string(), kind: z.string(), text: z.string() }).passthrough(),
          })
          .strict(),
      ),
    })
    .strict()
    .describe("Items of one episodic level, best first"),
  videoItem: z
    .object({
      item: z.object({ id: z.string(), kind: z.string(), text: z.string() }).passthrough(),
      before: z.array(z.object({ id: z.string() }).passthrough()),
      after: z.array(z.object({ id: z.string() }).passthrough()),
    })
    .strict()
    .describe("An item with its time-ordered neighbours at the same level"),
  videoMoments: z
    .object({
      moments: z.array(
        z
          .object({
            item: z.object({ id: z.string(), text: z.string() }).passthrough(),
            frames: z.array(z.object({ hash: z.string(), time: z.string() }).passthrough()),
          })
          .strict(),
      ),
    })
    .strict()
    .describe("Per-segment moments (traces), newest first, with the key frames behind each"),
  videoSources: z
    .object({
      sources: z.array(
        z
          .object({
            source: z.string(),
            live: z.boolean().describe("a watch of it is running now"),
            segments: z.number().int(),
            streams: z.array(
              z
                .object({
                  stream: z.string(),
                  live: z.boolean(),
                  from: z.string(),
                  to: z.string(),
                  segments: z.number().int(),
                })
                .strict(),
            ),
          })
          .strict(),
      ),
    })
    .strict()
    .describe("Watched sources, most recently seen first, with their streams and live status"),
  videoAnswer: z
    .object({
      question: z.string(),
      answer: z.string(),
      cited: z.array(z.object({ id: z.string(), text: z.string() }).passthrough()),
      evidence: z.array(
        z.object({ score: z.number(), item: z.object({ id: z.string() }).passthrough() }).passthrough(),
      ),
      warnings: z.array(z.string()),
    })
    .strict()
    .describe("An answer from the video memory with the items it cites"),
  videoFacts: z
    .object({
      facts: z.array(
        z
          .object({
            id: z.string(),
            text: z.string(),
            category: z.string(),
            importance: z.number(),
            sources: z.array(z.string()).describe("raw nodes (key frames, crops) behind the fact"),
          })
          .passthrough(),
      ),
    })
    .strict()
    .describe("Semantic facts, most important first"),
  entityMemory: z
    .object({
      entity: z.object({ id: z.string() }).passthrough(),
      facts: z.array(z.object({ id: z.string(), text: z.string(), importance: z.number() }).passthrough()),
      recent: z.array(z.object({ id: z.string(), text: z.string() }).passthrough()),
      nextConsolidationIn: z.number().int(),
    })
    .strict()
    .describe("One entity's panel: its evolving facts with their edit history, sightings and recent observations"),
  videoRule: z.object({ rule: z.object({ id: z.string(), text: z.string() }).passthrough() }).strict(),
  bank: z
    .object({
      programs: z.array(
        z
          .object({
            id: z.string(),
            status: z.literal("active"),
            question: z.string().describe("the predicted question the program answers"),
            kind: z.string().describe("the evidence opportunity it came from"),
            program: z
              .record(z.string(), z.unknown())
              .describe("the typed DAG: steps (operator, inputs, arguments) and the output step"),
            evidence: z.array(z.string()).describe("raw nodes the verification rests on"),
            sessions: z.array(z.string()),
            coverFrom: z.string(),
            coverTo: z.string(),
            verification: z.record(z.string(), z.unknown()).describe("roles, attempts with diagnoses, as-of time"),
            created: z.string(),
          })
          .strict(),
      ),
      retired: z.array(
        z
          .object({
            id: z.string(),
            status: z.literal("retired"),
            question: z.string().nullable(),
            reason: z.string(),
            detail: z.string().nullable(),
            time: z.string(),
            event: z.string().describe("the audit event that retired it"),
          })
          .strict(),
      ),
    })
    .strict()
    .describe("The question bank (PMMC): active programs, oldest first, and recent retirements from the audit log"),
  videoRules: z.object({ rules: z.array(z.object({ id: z.string(), text: z.string() }).passthrough()) }).strict(),
  videoRuleRemoved: z.object({ removed: z.string() }).strict(),
  videoNotifications: z
    .object({
      notifications: z.array(z.object({ id: z.string(), text: z.string() }).passthrough()),
    })
    .strict()
    .describe("The notifier's decisions (sent, suppressed, cleared), newest first"),
  videoFrames: z
    .object({
      frames: z.array(
        z
          .object({
            rawNodeId: z.string(),
            time: z.string(),
            hash: z.string().describe("fetch the original pixels at /v1/blobs/{hash}"),
            mediaType: z.string(),
            caption: z.string().nullable(),
          })
          .strict(),
      ),
    })
    .strict(),
  stats: z
    .object({
      sessions: z.number().int(),
      rawNodes: z.number().int(),
      images: z.number().int(),
      entries: z.number().int(),
      auditEvents: z.number().int(),
    })
    .strict(),
  forget: z
    .object({
      sessions: z.number().int(),
      rawNodes: z.number().int(),
      entries: z.number().int(),
      blobsDeleted: z.number().int(),
      auditId: z.string(),
      erasure: z
        .object({
          outcome: z.enum(["clean", "vacuumed", "pending"]),
          pagesScanned: z.number().int(),
          ms: z.number().int(),
        })
        .strict()
        .optional()
        .describe(
          "SQLite store: how the forgotten bytes were made to leave cairn.db (a scan found none, it vacuumed, or a reader kept it pending)",
        ),
    })
    .strict(),
  error: z
    .object({
      error: z
        .object({
          code: z.enum(errorCodes),
          message: z.string(),
          field: z.string().optional().describe("the offending field or header, when there is one"),
        })
        .strict(),
    })
    .strict()
    .describe("Every error: 400 input, 401/403 authentication and Host/Origin, 404, 409, 413, 415, 500, 502"),
  jsonRpcRequest: z
    .object({
      jsonrpc: z.literal("2.0"),
      id: jsonRpcId.optional().describe("absent for a notification"),
      method: z.string(),
      params: z.record(z.string(), z.unknown()).optional(),
    })
    .passthrough()
    .describe("One MCP JSON-RPC message (initialize, tools/call, resources/read, ...)"),
  jsonRpcResponse: z
    .object({
      jsonrpc: z.literal("2.0"),
      id: jsonRpcId.nullable(),
      result: z.record(z.string(), z.unknown()).optional(),
      error: z
        .object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() })
        .passthrough()
        .optional(),
    })
    .passthrough()
    .describe("An MCP JSON-RPC answer: a result, or an error"),
};

/** Parses untrusted input; the first issue becomes an `InputError` naming its field. */
export function parseWith<T extends z.ZodTypeAny>(schema: T, value: unknown, location: string): z.infer<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue?.path.map((part) => (typeof part === "number" ? `[${part}]` : `.${part}`)).join("") ?? "";
  throw new InputError(`${location}${path}`, issue?.message ?? "invalid");
}

// Compile-time checks that the SDK's results satisfy the documented response schemas.
type DeepReadonly<T> = T extends readonly (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;
type Satisfies<Actual extends DeepReadonly<Documented>, Documented> = Actual;
export type DocumentedTypes = [
  Satisfies<EvidencePack, z.infer<typeof evidencePack>>,
  Satisfies<RawNode, z.infer<typeof rawNode>>,
  Satisfies<SessionRecord, z.infer<typeof sessionRecord>>,
  Satisfies<AddSessionResult, z.infer<typeof responses.addSession>>,
  Satisfies<ForgetResult, z.infer<typeof responses.forget>>,
  Satisfies<ScopeStats, z.infer<typeof responses.stats>>,
  Satisfies<Knowledge, z.infer<typeof responses.knowledge>>,
];

/**
 * The schemas the OpenAPI document names under `components/schemas`; wherever one of these very
 * objects appears, the document refers to it by name, so a generated client gets a type per name.
 */
export const componentSchemas: Readonly<Record<string, z.ZodTypeAny>> = {
  SessionInput: sessionBody,
  SessionBatchInput: sessionBatchBody,
  TurnInput: turnInput,
  ImageInput: imageInput,
  MultipartSessionInput: multipartSessionBody,
  AppendTurnsInput: appendTurnsBody,
  RememberInput: rememberBody,
  RememberResult: responses.remember,
  SearchRequest: searchBody,
  ForgetRequest: forgetBody,
  Health: responses.health,
  AddSessionResult: responses.addSession,
  SessionRecord: responses.sessionRecord,
  SessionList: responses.sessions,
  SessionDetail: responses.session,
  RawNode: responses.rawNode,
  ImageRef: responses.imageRef,
  EvidencePack: responses.evidencePack,
  EvidenceItem: responses.evidenceItem,
  EvidenceImage: responses.evidenceImage,
  ImageAsText: responses.imageAsText,
  Provenance: responses.provenance,
  ChannelHit: responses.channelHit,
  Budget: responses.budget,
  BudgetUse: responses.budgetUse,
  RouteTrace: responses.routeTrace,
  Knowledge: responses.knowledge,
  KnownMemory: responses.knownMemory,
  KnownTurn: responses.knownTurn,
  EntryList: responses.entries,
  AuditList: responses.audit,
  Stats: responses.stats,
  ForgetResult: responses.forget,
  Error: responses.error,
  JsonRpcRequest: responses.jsonRpcRequest,
  JsonRpcResponse: responses.jsonRpcResponse,
};
