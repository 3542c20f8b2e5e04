import { InputError } from "../../core/errors.ts";
import type { Scope } from "../../core/scope.ts";
import type { ImageInput, SessionInput, TurnInput } from "../../ingest/session-input.ts";
import type { SessionBody } from "./schemas.ts";

/**
 * Turns an uploaded session into the SDK's input: file-part references become bytes, and a `user`
 * in the body must be the request's own (the scope comes from the key, never from the body).
 */
export async function toSessionInput(
  body: SessionBody,
  files: ReadonlyMap<string, File>,
  scope: Scope,
): Promise<SessionInput> {
  const { user, ...session } = body;
  if (user !== undefined && user !== scope.user) {
    throw new InputError(
      "body.user",
      `is ${user} but this request acts as user ${scope.user} (from the key or X-Cairn-User)`,
    );
  }
  return { ...session, turns: await toTurnInputs(session.turns, files) };
}

/** Runs `work` for the batch's session `index`; an input error it raises names the session (`body.sessions[i]…`). */
export async function atBatchIndex<T>(index: number, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    throw new InputError(error.field.replace(/^body\./, `body.sessions[${index}].`), error.reason, { cause: error });
  }
}

/** Turns of a JSON or multipart body, their images resolved (file parts read, base64 kept). */
export async function toTurnInputs(
  bodyTurns: SessionBody["turns"],
  files: ReadonlyMap<string, File>,
): Promise<TurnInput[]> {
  const turns: TurnInput[] = [];
  for (const [turnIndex, { images, ...turn }] of bodyTurns.entries()) {
    if (!images) {
      turns.push(turn);
      continue;
    }
    const inputs: ImageInput[] = [];
    for (const [imageIndex, image] of images.entries()) {
      inputs.push(await toImageInput(image, files, `body.turns[${turnIndex}].images[${imageIndex}]`));
    }
    turns.push({ ...turn, images: inputs });
  }
  return turns;
}

async function toImageInput(
  image: NonNullable<SessionBody["turns"][number]["images"]>[number],
  files: ReadonlyMap<string, File>,
  field: string,
): Promise<ImageInput> {
  const caption = image.caption === undefined ? {} : { caption: image.caption };
  if (image.file !== undefined) {
    const file = files.get(image.file);
    if (!file) throw new InputError(`${field}.file`, `no file part named ${image.file} in the upload`);
    return { data: new Uint8Array(await file.arrayBuffer()), ...caption };
  }
  if (image.data !== undefined) {
    return { data: image.data, ...(image.mediaType === undefined ? {} : { mediaType: image.mediaType }), ...caption };
  }
  if (image.url !== undefined) return { url: image.url, ...caption };
  // The schema guarantees exactly one source; what is left is a caption-only image.
  return { unavailable: image.unavailable as string, caption: image.caption ?? "" };
}
