import { ConflictError, InputError, NotFoundError } from "../core/errors.ts";
import type { Scope } from "../core/scope.ts";
import { parseRfc3339, rfc3339Reason } from "../core/time.ts";
import type { Memory } from "../memory.ts";
import type { ImageInput } from "./session-input.ts";

/** What to remember besides the words: images, and optionally where, when and who. */
export interface RememberOptions {
  /** As a turn's images: `path` (relative to `baseDir`), `data` (bytes or base64), `url` (when allowed). */
  readonly images?: readonly ImageInput[];
  /** Groups notes of one conversation under one key prefix; 1-128 of letters, digits and . _ : @ - */
  readonly conversation?: string;
  /** RFC 3339 with a zone; the memory's clock when absent. */
  readonly time?: string;
  /** Default "user". */
  readonly speaker?: string;
  readonly role?: string;
  /** Folder relative image paths are read from, as `AddSessionOptions.baseDir`. */
  readonly baseDir?: string;
  /** The session's `source`: which surface remembered it. Default "remember". */
  readonly source?: string;
}

export interface RememberResult {
  readonly sessionId: string;
  readonly sessionKey: string;
  readonly rawNodeId: string;
  readonly time: string;
  readonly conversation: string | null;
  readonly duplicate: boolean;
  readonly warnings: readonly string[];
}

/** Writers that pick the same free sequence number at once: the loser picks again, this many times. */
const maxAttempts = 5;

/**
 * Stores one note as its own one-turn session keyed `remember/<conversation or "day">/<YYYY-MM-DD>/<n>`:
 * the conversation and its day group in the key, in time order, and one note can be forgotten by its
 * key. Validation, image intake and the write are `addSession`'s, so a rejected note changes nothing.
 *
 * @example
 * await memory.remember(scope, "Ana's bike is a 54 cm frame", { images: [{ path: "bike.png" }] });
 */
export async function remember(
  memory: Memory,
  scope: Scope,
  text: string,
  options: RememberOptions,
  now: () => Date,
): Promise<RememberResult> {
  const words = typeof text === "string" ? text.trim() : "";
  const images = options.images ?? [];
  if (words === "" && images.length === 0) throw new InputError("text", "give text to remember, an image, or both");
  const time = options.time ?? now().toISOString();
  if (parseRfc3339(time) === null) throw new InputError("time", rfc3339Reason);
  const conversation = options.conversation?.trim() || null;
  if (conversation !== null && !/^[\w.:@-]{1,128}$/.test(conversation)) {
    throw new InputError("conversation", "use 1-128 letters, digits and . _ : @ -");
  }
  const turn = {
    speaker: options.speaker ?? "user",
    ...(options.role ? { role: options.role } : {}),
    ...(words ? { text: words } : {}),
    ...(images.length > 0 ? { images } : {}),
  };
  const prefix = `remember/${conversation ?? "day"}/${time.slice(0, 10)}/`;

  for (let attempt = 1; ; attempt++) {
    const key = `${prefix}${await nextSequence(memory, scope, prefix)}`;
    const session = { session: key, time, source: options.source ?? "remember", turns: [turn] };
    try {
      const result = await memory.addSession(scope, session, options.baseDir ? { baseDir: options.baseDir } : {});
      return {
        sessionId: result.sessionId,
        sessionKey: result.sessionKey,
        rawNodeId: result.rawNodeIds[0] ?? "",
        time,
        conversation,
        duplicate: result.duplicate,
        warnings: result.warnings,
      };
    } catch (error) {
      // Another writer took this number between the probe and the commit.
      if (!(error instanceof ConflictError) || attempt >= maxAttempts) throw error;
    }
  }
}

/**
 * The first free sequence number under `prefix`: numbers run 1, 2, 3... in a day, so doubling finds
 * a free one and bisection the first free after the taken run (a forgotten number may be reused,
 * which is harmless: keys only need to be unique while stored).
 */
async function nextSequence(memory: Memory, scope: Scope, prefix: string): Promise<string> {
  const taken = async (n: number) =>
    memory.getSession(scope, `${prefix}${pad(n)}`).then(
      () => true,
      (error) => {
        if (error instanceof NotFoundError) return false;
        throw error;
      },
    );
  let high = 1;
  while (await taken(high)) high *= 2;
  let low = Math.floor(high / 2); // taken (or 0)
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (await taken(middle)) low = middle;
    else high = middle;
  }
  return pad(high);
}

function pad(n: number): string {
  return String(n).padStart(4, "0");
}
