import { isAbsolute } from "node:path";
import { ConflictError, InputError, NotFoundError } from "../../core/errors.ts";
import type { Scope } from "../../core/scope.ts";
import { parseRfc3339, rfc3339Reason } from "../../core/time.ts";
import type { Memory } from "../../memory.ts";

/** What a host model sends to remember one thing: words, optionally an image, optionally where and when. */
export interface RememberInput {
  readonly text?: string;
  readonly image?: {
    readonly url?: string;
    readonly path?: string;
    readonly data?: string;
    readonly mediaType?: string;
    readonly caption?: string;
  };
  readonly conversation?: string;
  readonly time?: string;
  readonly speaker?: string;
  readonly role?: string;
}

export interface RememberOptions {
  /** The folder a remembered image's relative `path` is read from; without it paths are refused. */
  readonly imageFolder?: string;
  /** Whether image URLs may be fetched (the memory must allow remote images as well). */
  readonly imageUrls: boolean;
  readonly now: () => Date;
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
 * Stores one remembered turn. The cold store never appends to a stored session (a key that exists
 * with other content is a `ConflictError`, raw nodes are immutable), so each call is its own
 * one-turn session keyed `remember/<conversation or "day">/<YYYY-MM-DD>/<n>`: the conversation and
 * its day group in the key, in time order, and the session list shows them together.
 *
 * @example
 * await remember(memory, scope, { text: "Ana's bike is a 54 cm frame" }, { imageUrls: false, now: () => new Date() });
 */
export async function remember(
  memory: Memory,
  scope: Scope,
  input: RememberInput,
  options: RememberOptions,
): Promise<RememberResult> {
  const text = input.text?.trim() ?? "";
  if (text === "" && input.image === undefined)
    throw new InputError("text", "give text to remember, an image, or both");
  const time = input.time ?? options.now().toISOString();
  if (parseRfc3339(time) === null) throw new InputError("time", rfc3339Reason);
  const conversation = input.conversation?.trim() || null;
  if (conversation !== null && !/^[\w.:@-]{1,128}$/.test(conversation)) {
    throw new InputError("conversation", "use 1-128 letters, digits and . _ : @ -");
  }
  const image = input.image === undefined ? undefined : imageOf(input.image, options);
  const turn = {
    speaker: input.speaker ?? "user",
    ...(input.role ? { role: input.role } : {}),
    ...(text ? { text } : {}),
    ...(image ? { images: [image] } : {}),
  };
  const prefix = `remember/${conversation ?? "day"}/${time.slice(0, 10)}/`;

  for (let attempt = 1; ; attempt++) {
    const key = `${prefix}${await nextSequence(memory, scope, prefix)}`;
    const session = { session: key, time, source: "mcp:remember", turns: [turn] };
    try {
      const result = await memory.addSession(
        scope,
        session,
        options.imageFolder ? { baseDir: options.imageFolder } : {},
      );
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

function imageOf(image: NonNullable<RememberInput["image"]>, options: RememberOptions) {
  const sources = (["url", "path", "data"] as const).filter((name) => image[name] !== undefined);
  if (sources.length !== 1) throw new InputError("image", "give exactly one of url, path or data");
  const caption = image.caption ? { caption: image.caption } : {};
  if (image.url !== undefined) {
    if (!options.imageUrls) {
      throw new InputError("image.url", "this server does not fetch image URLs (start it with --allow-remote-images)");
    }
    return { url: image.url, ...caption };
  }
  if (image.path !== undefined) {
    if (!options.imageFolder) {
      throw new InputError("image.path", "this server reads no local files (start it with --image-folder DIR)");
    }
    if (isAbsolute(image.path)) throw new InputError("image.path", "give a path relative to the server's image folder");
    return { path: image.path, ...caption };
  }
  return { data: image.data as string, ...(image.mediaType ? { mediaType: image.mediaType } : {}), ...caption };
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
