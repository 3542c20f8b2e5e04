import { createRequire } from "node:module";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Resource } from "@modelcontextprotocol/sdk/types.js";
import { InputError } from "../../core/errors.ts";
import type { Scope } from "../../core/scope.ts";
import { remember } from "../../ingest/remember.ts";
import type { Memory } from "../../memory.ts";
import type { RawNode } from "../../store/records.ts";
import { compactPack } from "../compact-pack.ts";
import { blobUri, compactEvidenceContent, evidenceContent, rawNodeContent, rawNodeUri } from "./content.ts";
import { registerContextTool } from "./context-tool.ts";
import { rememberImage } from "./remember-image.ts";
import {
  addSessionInput,
  addSessionOutput,
  forgetInput,
  forgetOutput,
  getImageInput,
  getRawNodeInput,
  listSessionsInput,
  recallArguments,
  rememberInput,
  rememberOutput,
  searchInput,
  searchOutput,
  videoAnswerInput,
  videoEntityInput,
  videoItemInput,
  videoRuleInput,
  videoSearchInput,
} from "./schemas.ts";
import { jsonResult, logToStderr, type McpLogEvent, resourceResult, toolResult } from "./tool-result.ts";

export type { McpLogEvent };

export interface McpServerOptions {
  /** Where unexpected failures go (typed events); default stderr. */
  readonly log?: (event: McpLogEvent) => void;
  /** The folder `cairn_remember` may read an image `path` from (relative paths only); none by default. */
  readonly imageFolder?: string;
  /** Let `cairn_remember` fetch image URLs (the memory must allow remote images too). Off by default. */
  readonly imageUrls?: boolean;
  /** The clock `cairn_remember` stamps a memory with when no time is given. */
  readonly now?: () => Date;
}

/** The default text budget of an MCP search: a few thousand tokens leave the host model room to answer. */
export const mcpSearchTextTokens = 2_000;

const { version } = createRequire(import.meta.url)("../../../package.json") as { version: string };

const instructions = `Cairn is this user's long-term memory of past conversations, including their images.
Call cairn_search before answering questions about the past; its evidence is the original turns with provenance
(session, turn, time, speaker), with images as links (read one with cairn_get_image or the cairn://blobs resource).
Store something worth keeping with cairn_remember (plain text, optionally an image); whole sessions with
cairn_add_session.`;

/**
 * An MCP server whose tools and resources act on one scope of `memory`; the scope is fixed by
 * whoever starts the server (CLI flags, or the API key over HTTP), never by the tool arguments.
 * The caller owns `memory` and closes it.
 *
 * @example
 * const server = createMcpServer(memory, { tenant: "acme", user: "ana" });
 * await server.connect(new StdioServerTransport());
 */
export function createMcpServer(memory: Memory, scope: Scope, options: McpServerOptions = {}): McpServer {
  const log = options.log ?? logToStderr;
  const server = new McpServer(
    { name: "cairn", version },
    { instructions, capabilities: { logging: {}, tools: {}, resources: {}, prompts: {} } },
  );

  server.registerTool(
    "cairn_remember",
    {
      title: "Remember",
      description:
        "Stores one thing to remember in long-term memory: plain text, optionally with one image (base64 `data`, " +
        "or a `url` / `path` where this server allows them). The time defaults to now. Memories of one day, or of " +
        "one `conversation` id, are kept together in time order.",
      inputSchema: rememberInput,
      outputSchema: rememberOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (input) =>
      toolResult("cairn_remember", log, async () => {
        const { text, image, ...rest } = input;
        const policy = { imageFolder: options.imageFolder, imageUrls: options.imageUrls === true };
        const result = await remember(
          memory,
          scope,
          text ?? "",
          {
            ...rest,
            images: image === undefined ? [] : [rememberImage(image, policy)],
            baseDir: options.imageFolder,
            source: "mcp:remember",
          },
          options.now ?? (() => new Date()),
        );
        return jsonResult(result, `remembered as ${result.sessionKey} (raw node ${result.rawNodeId})`);
      }),
  );

  registerContextTool(server, memory, scope, log);

  server.registerTool(
    "cairn_add_session",
    {
      title: "Remember a session",
      description:
        "Stores one conversation session (turns with text and images) in long-term memory. Images go as base64 `data`. " +
        "Storing the identical session again changes nothing (duplicate: true).",
      inputSchema: addSessionInput,
      outputSchema: addSessionOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ session }) =>
      toolResult("cairn_add_session", log, async () => {
        const result = await memory.addSession(scope, sessionForScope(session, scope));
        return jsonResult(
          result,
          result.duplicate
            ? `session ${result.sessionKey} was already stored`
            : `stored session ${result.sessionKey} as ${result.rawNodeIds.length} raw node(s)`,
        );
      }),
  );

  server.registerTool(
    "cairn_search",
    {
      title: "Search memory",
      description:
        "Finds evidence in long-term memory for a text and/or image query. Returns the original turns with their " +
        `provenance, best first, within ${mcpSearchTextTokens} text tokens unless budget.textTokens says otherwise; ` +
        "images come as links to cairn://blobs/<hash> (its 256 px thumbnail is cairn://thumbnails/<hash>; " +
        "images: thumbnail or original attaches them). Read a turn in full with " +
        "cairn_get_raw_node (its id), an image's pixels with cairn_get_image (its hash) or the linked resource.",
      inputSchema: searchInput,
      outputSchema: searchOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ text, image, budget, filters, channels, mode: readMode, vision, minScore, images, detail }) =>
      toolResult("cairn_search", log, async () => {
        const pack = await memory.search(
          scope,
          { text, image },
          {
            budget: { textTokens: mcpSearchTextTokens, ...definedOnly(budget ?? {}) },
            filters,
            channels,
            mode: readMode,
            vision,
            minScore,
          },
        );
        const mode = images ?? "link";
        return {
          content: mode === "link" ? compactEvidenceContent(pack) : await evidenceContent(memory, scope, pack, mode),
          structuredContent: (detail === "full" ? pack : compactPack(pack)) as unknown as Record<string, unknown>,
        };
      }),
  );

  server.registerTool(
    "cairn_get_raw_node",
    {
      title: "Read a raw node",
      description: "One original turn by id, with its provenance and images.",
      inputSchema: getRawNodeInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ id, images }) =>
      toolResult("cairn_get_raw_node", log, async () => {
        const node = await memory.getRawNode(scope, id);
        return {
          content: await rawNodeContent(memory, scope, node, images ?? "original"),
          structuredContent: node as unknown as Record<string, unknown>,
        };
      }),
  );

  server.registerTool(
    "cairn_get_image",
    {
      title: "Show an image",
      description:
        "The pixels of one stored image, by the hash (or cairn://blobs/… link) a search returned: the original " +
        "by default, or its 256 px thumbnail.",
      inputSchema: getImageInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ hash, size }) =>
      toolResult("cairn_get_image", log, async () => {
        const bare = hash.replace(/^cairn:\/\/(blobs|thumbnails)\//, "");
        const blob = await memory.getBlob(scope, bare, { thumbnail: size === "thumbnail" });
        return {
          content: [{ type: "image", data: Buffer.from(blob.data).toString("base64"), mimeType: blob.mediaType }],
        };
      }),
  );

  server.registerTool(
    "cairn_video_entities",
    {
      title: "People seen on video",
      description:
        "The entities (people) seen in watched video or enrolled from photos, with their names and sightings: per " +
        "stream, from when to when, how many observations, and key-frame raw-node ids.",
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    () =>
      toolResult("cairn_video_entities", log, async () => jsonResult({ entities: await memory.listEntities(scope) })),
  );

  server.registerTool(
    "cairn_video_search",
    {
      title: "Search video memory",
      description:
        "Similarity search over one level of the video memory: observations (one entity in one segment), traces " +
        "(one segment: who, what objects, text read), chapters (closed events), facts (durable knowledge about an " +
        "entity, ranked with its importance), rules (the user's standing rules) or notifications (the notifier's " +
        "log). Open a hit with cairn_video_item.",
      inputSchema: videoSearchInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ query, level, limit, entity }) =>
      toolResult("cairn_video_search", log, async () => {
        const hits = await memory.searchVideo(scope, query, { level, limit, entityId: entity });
        return jsonResult(
          { hits },
          hits
            .map((hit) => `${hit.item.id} (${new Date(hit.item.startMs).toISOString()}): ${hit.item.text}`)
            .join("\n") || "nothing found",
        );
      }),
  );

  server.registerTool(
    "cairn_video_item",
    {
      title: "Open a video item",
      description:
        "One video item with its time-ordered neighbours at the same level, and the key frames and crops behind it " +
        "(the stored pixels), to check a detail visually.",
      inputSchema: videoItemInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ id, frames }) =>
      toolResult("cairn_video_item", log, async () => {
        const found = await memory.getVideoItem(scope, id);
        const keyFrames = await memory.videoKeyFrames(scope, id);
        const mode = frames ?? "thumbnail";
        const pictures =
          mode === "none"
            ? []
            : await Promise.all(
                keyFrames.slice(0, 4).map(async (frame) => {
                  const blob = await memory.getBlob(scope, frame.hash, { thumbnail: mode === "thumbnail" });
                  return {
                    type: "image" as const,
                    data: Buffer.from(blob.data).toString("base64"),
                    mimeType: blob.mediaType,
                  };
                }),
              );
        const summary = jsonResult({ ...found, frames: keyFrames });
        return { ...summary, content: [...summary.content, ...pictures] };
      }),
  );

  server.registerTool(
    "cairn_video_entity",
    {
      title: "An entity's memory",
      description:
        "One entity's evolving semantic memory: its facts (attributes, habits, relations) with importance and edit " +
        "history, its sightings per stream and its recent observations.",
      inputSchema: videoEntityInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ id }) =>
      toolResult("cairn_video_entity", log, async () => {
        const panel = await memory.entityMemory(scope, id);
        return jsonResult(
          { ...panel },
          panel.facts.map((fact) => `${fact.text} (importance ${fact.importance})`).join("\n") || "no facts yet",
        );
      }),
  );

  server.registerTool(
    "cairn_video_answer",
    {
      title: "Answer from video memory",
      description:
        "Answers a question from the video memory (facts, chapters, traces, observations) with the server's chat " +
        "model and returns the items it cited; fails when the server has no chat model.",
      inputSchema: videoAnswerInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ question }) =>
      toolResult("cairn_video_answer", log, async () => {
        const answer = await memory.answerFromVideo(scope, question);
        return jsonResult(
          { ...answer },
          `${answer.answer}\n(cited: ${answer.cited.map((item) => item.id).join(", ")})`,
        );
      }),
  );

  server.registerTool(
    "cairn_video_rule",
    {
      title: "Set a video rule",
      description:
        'States a standing rule for the user\'s streams, e.g. "alert when fewer than 2 bottles remain" or "tell me ' +
        'when Ana arrives"; other wording is kept as a preference. A deterministic notifier decides deliveries.',
      inputSchema: videoRuleInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    ({ text, source }) =>
      toolResult("cairn_video_rule", log, async () => {
        const rule = await memory.addVideoRule(scope, { text, ...(source ? { source } : {}) });
        return jsonResult({ rule }, `${rule.id}: ${JSON.stringify(rule.data.condition)}`);
      }),
  );

  server.registerTool(
    "cairn_list_sessions",
    {
      title: "List sessions",
      description: "The stored sessions of this user in time order, oldest first (limit default 50, offset to page).",
      inputSchema: listSessionsInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    ({ limit, offset }) =>
      toolResult("cairn_list_sessions", log, async () => {
        const sessions = await memory.listSessions(scope, { limit: limit ?? 50, offset: offset ?? 0 });
        return jsonResult({ sessions });
      }),
  );

  server.registerTool(
    "cairn_forget",
    {
      title: "Forget",
      description:
        "Deletes a session or a single raw node and everything derived from it (vectors, entries, images no longer " +
        "referenced). The deletion is audited. Give exactly one of session or rawNode.",
      inputSchema: forgetInput,
      outputSchema: forgetOutput,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    ({ session, rawNode }) =>
      toolResult("cairn_forget", log, async () => {
        if ((session === undefined) === (rawNode === undefined))
          throw new InputError("forget", "give exactly one of session or rawNode");
        const result = await memory.forget(scope, session !== undefined ? { session } : { rawNode: rawNode as string });
        return jsonResult(result, `forgot ${result.sessions} session(s), ${result.rawNodes} raw node(s)`);
      }),
  );

  server.registerResource(
    "raw-node",
    new ResourceTemplate("cairn://raw-nodes/{id}", {
      list: async () => ({ resources: (await recentRawNodes(memory, scope)).map(rawNodeResource) }),
    }),
    {
      title: "Raw node",
      description: "One original turn (text, images, provenance) as JSON",
      mimeType: "application/json",
    },
    (uri, variables) =>
      resourceResult(async () => {
        const node = await memory.getRawNode(scope, single(variables.id));
        return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(node, null, 2) }] };
      }),
  );

  server.registerResource(
    "blob",
    new ResourceTemplate("cairn://blobs/{hash}", {
      list: async () => ({ resources: blobResources(await recentRawNodes(memory, scope)) }),
    }),
    { title: "Image", description: "The original bytes of a stored image, by its SHA-256" },
    (uri, variables) =>
      resourceResult(async () => {
        const blob = await memory.getBlob(scope, single(variables.hash));
        return {
          contents: [{ uri: uri.href, mimeType: blob.mediaType, blob: Buffer.from(blob.data).toString("base64") }],
        };
      }),
  );

  server.registerResource(
    "thumbnail",
    new ResourceTemplate("cairn://thumbnails/{hash}", { list: undefined }),
    { title: "Image thumbnail", description: "A 256 px WebP thumbnail of a stored image, by the original's SHA-256" },
    (uri, variables) =>
      resourceResult(async () => {
        const blob = await memory.getBlob(scope, single(variables.hash), { thumbnail: true });
        return {
          contents: [{ uri: uri.href, mimeType: blob.mediaType, blob: Buffer.from(blob.data).toString("base64") }],
        };
      }),
  );

  server.registerPrompt(
    "recall",
    {
      title: "Recall what you know about…",
      description: "Searches this user's memory for a topic and hands the evidence to the model to summarise",
      argsSchema: recallArguments,
    },
    async ({ topic }) => {
      const pack = await memory.search(scope, topic, { budget: { textTokens: mcpSearchTextTokens } });
      const evidence = compactEvidenceContent(pack)
        .map((block) =>
          block.type === "text" ? block.text : block.type === "resource_link" ? `(image ${block.uri})` : "",
        )
        .join("\n\n");
      return {
        description: `What Cairn's memory holds about ${topic}`,
        messages: [
          {
            role: "user",
            content: {
              type: "text",
              text:
                `Recall what you know about ${JSON.stringify(topic)} from my long-term memory below. Say what each ` +
                "statement rests on (session and time), prefer the latest state when things changed, and say so " +
                `when the memory holds nothing about it.\n\n${evidence}`,
            },
          },
        ],
      };
    },
  );

  // The SDK declares listChanged for every registered kind, but this server never sends those
  // notifications: its tools, templates and prompts are fixed for its life, and /mcp is stateless
  // (there is no stream to notify on). Declaring them would make hosts wait for updates that never come.
  server.server.registerCapabilities({
    tools: { listChanged: false },
    resources: { listChanged: false, subscribe: false },
    prompts: { listChanged: false },
  });
  return server;
}

/**
 * Over MCP an image arrives as bytes: the server must not read its own disk or reach the network on
 * a remote caller's behalf. The scope comes from the server, so a session naming another is refused.
 */
function sessionForScope(session: Record<string, unknown>, scope: Scope): Record<string, unknown> {
  const { user, tenant, agent, ...body } = session;
  for (const [field, value] of Object.entries({ tenant, user, agent })) {
    if (value !== undefined && value !== scope[field as keyof Scope]) {
      throw new InputError(
        `session.${field}`,
        `this server is scoped to ${field} ${scope[field as keyof Scope] ?? "(none)"}`,
      );
    }
  }
  const turns = Array.isArray(body.turns) ? body.turns : [];
  for (const [turnIndex, turn] of turns.entries()) {
    const images = (turn as { images?: unknown })?.images;
    if (!Array.isArray(images)) continue;
    for (const [imageIndex, image] of images.entries()) {
      const field = `turns[${turnIndex}].images[${imageIndex}]`;
      if (image && typeof image === "object" && "path" in image)
        throw new InputError(`${field}.path`, "local paths are not accepted over MCP: send the bytes as base64 `data`");
      if (image && typeof image === "object" && "url" in image)
        throw new InputError(`${field}.url`, "URLs are not fetched over MCP: send the bytes as base64 `data`");
    }
  }
  return body;
}

/** Listing offers the latest sessions only: a long memory is searched, not browsed. */
const listedSessions = 20;

async function recentRawNodes(memory: Memory, scope: Scope): Promise<RawNode[]> {
  const { sessions } = await memory.stats(scope);
  const recent = await memory.listSessions(scope, {
    limit: listedSessions,
    offset: Math.max(0, sessions - listedSessions),
  });
  const nodes: RawNode[] = [];
  for (const session of recent.reverse()) nodes.push(...(await memory.listRawNodes(scope, session.id)));
  return nodes;
}

function rawNodeResource(node: RawNode): Resource {
  const text = node.text.length > 120 ? `${node.text.slice(0, 119)}…` : node.text;
  return {
    uri: rawNodeUri(node.id),
    name: `${node.sessionKey} turn ${node.turn}`,
    description: [node.time, node.speaker, text].filter(Boolean).join(" · "),
    mimeType: "application/json",
  };
}

function blobResources(nodes: readonly RawNode[]): Resource[] {
  const seen = new Map<string, Resource>();
  for (const node of nodes) {
    for (const image of node.images) {
      if (!image.hash || seen.has(image.hash)) continue;
      seen.set(image.hash, {
        uri: blobUri(image.hash),
        name: image.caption ?? `image ${image.hash.slice(0, 12)}`,
        description: `${node.sessionKey} turn ${node.turn}, ${image.width}×${image.height}`,
        mimeType: image.mediaType ?? undefined,
      });
    }
  }
  return [...seen.values()];
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>;
}

function single(value: string | string[] | undefined): string {
  const text = Array.isArray(value) ? value[0] : value;
  return decodeURIComponent(text ?? "");
}
