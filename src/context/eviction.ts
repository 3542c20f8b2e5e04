import { createHash } from "node:crypto";
import type { Scope } from "../core/scope.ts";
import type { SessionInput, TurnInput } from "../ingest/session-input.ts";
import type { DroppedContent } from "./context-manager.ts";
import { messageText, type TrajectoryMessage } from "./trajectory.ts";

/** Where a manager's evictions are kept, and how the working context points at them. */
export interface EvictionPointer {
  /** The memory session that holds the evicted messages. */
  readonly session: string;
  readonly messages: number;
  readonly images: number;
}

/** Writes evicted messages somewhere an agent can search later. */
export interface EvictionStore {
  store(trajectoryId: string, messages: readonly TrajectoryMessage[]): Promise<EvictionPointer>;
}

/** The part of `Memory` eviction uses (declared here so the context layer needs nothing above it). */
export interface SessionWriter {
  addSession(scope: Scope, input: unknown): Promise<{ readonly sessionId: string }>;
}

/** A memory session's turn text is capped (100,000 characters by default); longer messages become several turns. */
const turnTextChars = 90_000;
/** ...and its images per turn (32). */
const turnImages = 32;

/**
 * Evicts into Cairn's memory: the dropped messages become one session (one or more turns per message, with
 * the message id and role in metadata and the original images as pixels), searchable like any other.
 * Writing the same messages again is acknowledged as a duplicate, so a replay may call it repeatedly.
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
      const hash = createHash("sha256");
      for (const message of messages) hash.update(message.id).update("\u0000");
      const first = messages[0]?.id ?? "";
      const last = messages[messages.length - 1]?.id ?? "";
      const session = `context:${trajectoryId.slice(0, 120)}:${first.slice(0, 40)}..${last.slice(0, 40)}:${hash.digest("hex").slice(0, 12)}`;
      const now = clock().toISOString();
      const turns: TurnInput[] = messages.flatMap((message) => turnsOf(message, trajectoryId));
      const input: SessionInput = {
        session,
        time: validTime(messages[0]?.time) ?? now,
        source: "context-eviction",
        turns,
      };
      await memory.addSession(scope, input);
      return {
        session,
        messages: messages.length,
        images: messages.reduce((sum, message) => sum + message.images.length, 0),
      };
    },
  };
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
