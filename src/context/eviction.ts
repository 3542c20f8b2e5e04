import { createHash } from "node:crypto";
import { NotFoundError } from "../core/errors.ts";
import type { Scope } from "../core/scope.ts";
import type { TurnInput } from "../ingest/session-input.ts";
import type { DroppedContent } from "./context-manager.ts";
import { messageText, type TrajectoryMessage } from "./trajectory.ts";

/** Where a manager's evictions are kept, and how the working context points at them. */
export interface EvictionPointer {
  /** Every evicted message is the memory session `<prefix><message id>:<content hash>`. */
  readonly prefix: string;
  readonly messages: number;
  /** Sessions written by this call (the others were already stored by an earlier one). */
  readonly written: number;
  readonly images: number;
}

/** Writes evicted messages somewhere an agent can search later. */
export interface EvictionStore {
  store(trajectoryId: string, messages: readonly TrajectoryMessage[]): Promise<EvictionPointer>;
}

/** The part of `Memory` eviction uses (declared here so the context layer needs nothing above it). */
export interface SessionWriter {
  addSession(scope: Scope, input: unknown): Promise<{ readonly sessionId: string }>;
  /** Rejects (NotFoundError) when no session has this id or key. */
  getSession(scope: Scope, idOrKey: string): Promise<unknown>;
}

/** A memory session's turn text is capped (100,000 characters by default); longer messages become several turns. */
const turnTextChars = 90_000;
/** ...and its images per turn (32). */
const turnImages = 32;

/**
 * Evicts into Cairn's memory: each dropped message becomes one session keyed by the trajectory, the message id
 * and a hash of its content (text as turns, original images as pixels, the message id and role in metadata),
 * searchable like any other. A message already stored is not written again, so every call of a long-running
 * agent may evict what it drops without duplicating what an earlier call kept.
 *
 * @example const store = memoryEvictionStore(memory, { tenant: "t", user: "u" });
 */
export function memoryEvictionStore(
  memory: SessionWriter,
  scope: Scope,
  clock: () => Date = () => new Date(),
): EvictionStore {
  return {
    async store(trajectoryId, messages) {
      const prefix = `context:${trajectoryId.slice(0, 120)}:`;
      let written = 0;
      for (const message of messages) {
        const key = `${prefix}${message.id.slice(0, 100)}:${contentHash(message)}`;
        if (await exists(memory, scope, key)) continue;
        const turns = turnsOf(message, trajectoryId);
        if (turns.length === 0) continue;
        await memory.addSession(scope, {
          session: key,
          time: validTime(message.time) ?? clock().toISOString(),
          source: "context-eviction",
          turns,
        });
        written++;
      }
      return {
        prefix,
        messages: messages.length,
        written,
        images: messages.reduce((sum, message) => sum + message.images.length, 0),
      };
    },
  };
}

async function exists(memory: SessionWriter, scope: Scope, key: string): Promise<boolean> {
  try {
    await memory.getSession(scope, key);
    return true;
  } catch (error) {
    if (error instanceof NotFoundError) return false;
    throw error;
  }
}

function contentHash(message: TrajectoryMessage): string {
  const hash = createHash("sha256")
    .update(message.role)
    .update("\u0000")
    .update(messageText(message, { captions: true }));
  for (const image of message.images) hash.update("\u0000").update(image.data);
  return hash.digest("hex").slice(0, 12);
}

function turnsOf(message: TrajectoryMessage, trajectoryId: string): TurnInput[] {
  const text = messageText(message, { captions: false });
  const chunks: string[] = [];
  for (let start = 0; start < text.length; start += turnTextChars)
    chunks.push(text.slice(start, start + turnTextChars));
  const imageChunks: TrajectoryMessage["images"][] = [];
  for (let start = 0; start < message.images.length; start += turnImages)
    imageChunks.push(message.images.slice(start, start + turnImages));
  const count = Math.max(1, chunks.length, imageChunks.length);
  const turns: TurnInput[] = [];
  for (let index = 0; index < count; index++) {
    const chunk = chunks[index] ?? "";
    const images = imageChunks[index] ?? [];
    if (chunk.trim() === "" && images.length === 0) continue;
    turns.push({
      speaker: message.name ?? message.role,
      role: message.role,
      ...(chunk.trim() ? { text: chunk } : {}),
      ...(validTime(message.time) ? { time: validTime(message.time) } : {}),
      ...(images.length > 0
        ? {
            images: images.map((image) => ({
              data: image.data,
              mediaType: image.mediaType,
              ...(image.caption ? { caption: image.caption } : {}),
            })),
          }
        : {}),
      metadata: { trajectory: trajectoryId, messageId: message.id, part: index },
    });
  }
  return turns;
}

function validTime(time: string | undefined): string | undefined {
  if (time === undefined) return undefined;
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(time) ? time : undefined;
}

/** The messages a manager's drops name, in history order. */
export function droppedMessages(
  messages: readonly TrajectoryMessage[],
  dropped: readonly DroppedContent[],
): TrajectoryMessage[] {
  const ids = new Set(dropped.map((entry) => entry.messageId));
  return messages.filter((message) => ids.has(message.id));
}
