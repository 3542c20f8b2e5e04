import { createHash } from "node:crypto";
import { InputError, InvariantError } from "../core/errors.ts";
import { parseRfc3339 } from "../core/time.ts";
import { embedImages as embedImagesInBatches, embedTexts } from "../models/model-calls.ts";
import type { Models } from "../models/provider.ts";
import type { VectorSpaces } from "../models/vector-spaces.ts";
import { contextualTexts, defaultIndexTextConfig, type IndexTextConfig } from "../store/index-text.ts";
import type { RawNodeWrite, SessionWrite } from "../store/records.ts";
import type { ScopedStore } from "../store/store.ts";
import type { AcceptedImage, IntakeOptions } from "./image-intake.ts";
import { intakeSessionImages, readImages, type SessionImages, type TurnImage } from "./session-images.ts";
import { parseSessionInput, type SessionInput } from "./session-input.ts";

/** A session ready to commit: every check done, every model run; only maintenance and the write remain. */
export interface PreparedSession {
  readonly write: Omit<SessionWrite, "index">;
  /** Identity of the turns alone (their own times count, the session's does not): an append's default part key. */
  readonly turnsHash: string;
  readonly warnings: readonly string[];
}

export interface PrepareContext {
  readonly models: Models;
  readonly spaces: VectorSpaces;
  readonly intake: IntakeOptions;
  /** Run the image readers on new images (default true). */
  readonly readImages?: boolean;
  /** What each raw node is searchable by besides its own text (default `defaultIndexTextConfig`). */
  readonly indexText?: IndexTextConfig;
}

/** Sessions of one `addSessions` call prepared at once: image decoding (off the main thread) overlaps embedding. */
const batchPreparations = 4;

/**
 * `prepareSession` for each of a batch, a few at a time, results in input order. Nothing is written
 * either way; a batch with bad input fails with the first bad session's error (by position, not by
 * which check finished first), its `InputError` field prefixed with `sessions[i].`.
 */
export async function prepareSessions(
  scoped: ScopedStore,
  inputs: readonly unknown[],
  context: PrepareContext,
): Promise<PreparedSession[]> {
  const outcomes: ({ ok: true; value: PreparedSession } | { ok: false; error: unknown })[] = [];
  const queue = inputs.entries();
  const worker = async (): Promise<void> => {
    // The iterator is shared, so each input is taken by exactly one worker.
    for (const [index, input] of queue) {
      try {
        outcomes[index] = { ok: true, value: await prepareSession(scoped, input, context) };
      } catch (error) {
        outcomes[index] = { ok: false, error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(batchPreparations, inputs.length) }, worker));
  const prepared: PreparedSession[] = [];
  for (const [index, outcome] of outcomes.entries()) {
    if (outcome.ok) {
      prepared.push(outcome.value);
      continue;
    }
    const { error } = outcome;
    if (error instanceof InputError) {
      throw new InputError(`sessions[${index}].${error.field}`, error.reason, { cause: error });
    }
    throw error;
  }
  return prepared;
}

/**
 * The write pipeline's first half: parse and limit-check the input, load and decode every image,
 * read and embed what is new (pixels already stored were read and embedded when they first
 * arrived), and lay out the raw nodes. Nothing is written; any bad input fails here.
 */
export async function prepareSession(
  scoped: ScopedStore,
  input: unknown,
  context: PrepareContext,
): Promise<PreparedSession> {
  const session = parseSessionInput(input, context.intake.limits);
  const warnings: string[] = [];
  const images = await intakeSessionImages(session, context.intake);
  const { models, spaces } = context;
  const known = await scoped.knownImages([...images.unique.keys()], spaces.image?.name ?? null);
  const unread =
    context.readImages === false
      ? []
      : [...images.unique.values()].filter((image) => !known.get(image.hash)?.derivedText);
  const derivedText = await readImages(models, unread, warnings);
  for (const [hash, { derivedText: text }] of known) if (text) derivedText.set(hash, text);

  const imageTexts = session.turns.map((_, index) =>
    (images.perTurn[index] ?? [])
      .flatMap((image) => [image.caption, image.accepted && derivedText.get(image.accepted.hash)])
      .filter(Boolean)
      .join("\n"),
  );
  const sessionTimeMs = timeMs(session.time);
  const turnTimes = session.turns.map((turn) => (turn.time ? timeMs(turn.time) : sessionTimeMs));
  // The lexical and dense text channels read each turn with its context (speaker, date, neighbours,
  // images); a turn that is only an image is represented by what the image says. The raw text is kept as given.
  const turnTexts = contextualTexts(
    session.turns.map((turn, index) => ({
      speaker: turn.speaker ?? null,
      text: turn.text ?? "",
      imageText: imageTexts[index] ?? "",
      timeMs: turnTimes[index] ?? sessionTimeMs,
    })),
    context.indexText ?? defaultIndexTextConfig,
  );
  // One pass through the embedder for both spaces: fewer round trips to the model worker.
  const vectors = await embedTexts(models.text, [...turnTexts, ...imageTexts]);
  const unembedded = [...images.unique.values()].filter((image) => !known.get(image.hash)?.vector);
  const imageVectors = await embedImages(models, unembedded, warnings);
  for (const [hash, { vector }] of known) if (vector) imageVectors.set(hash, vector);

  const rawNodes = session.turns.map(
    (turn, index): RawNodeWrite => ({
      turn: index,
      speaker: turn.speaker ?? null,
      role: turn.role ?? null,
      text: turn.text ?? "",
      indexText: turnTexts[index] ?? "",
      timeMs: turnTimes[index] ?? sessionTimeMs,
      source: session.source ?? null,
      uri: turn.uri ?? null,
      metadata: turn.metadata ?? {},
      images: (images.perTurn[index] ?? []).map(({ accepted, caption, origin }) => ({
        hash: accepted?.hash ?? null,
        caption,
        derivedText: (accepted && derivedText.get(accepted.hash)) ?? null,
        origin,
      })),
      textVectors: {
        ...inSpace(spaces.text.name, vectors[index]),
        ...inSpace(spaces.imageText.name, vectors[turnTexts.length + index]),
      },
      imageVectors: (images.perTurn[index] ?? []).map(({ accepted }) => {
        const vector = accepted && imageVectors.get(accepted.hash);
        return spaces.image && vector ? { [spaces.image.name]: vector } : {};
      }),
    }),
  );
  return {
    write: {
      key: session.session,
      timeMs: sessionTimeMs,
      source: session.source ?? null,
      contentHash: contentHash(session, images.perTurn),
      blobs: [...images.unique.values()].map(({ origin: _origin, ...blob }) => blob),
      rawNodes,
      spaces: spaces.image ? [spaces.text, spaces.imageText, spaces.image] : [spaces.text, spaces.imageText],
    },
    turnsHash: contentHash(session, images.perTurn, { turnsOnly: true }),
    warnings,
  };
}

/**
 * Checks a session exactly as `prepareSession` would (schema, limits, every image loaded and
 * decoded) without running a model or writing anything.
 */
export async function validateSession(
  input: unknown,
  intake: IntakeOptions,
): Promise<{ sessionKey: string; turns: number; images: number; contentHash: string; sessionImages: SessionImages }> {
  const session = parseSessionInput(input, intake.limits);
  const images = await intakeSessionImages(session, intake);
  return {
    sessionKey: session.session,
    turns: session.turns.length,
    images: images.perTurn.flat().length,
    contentHash: contentHash(session, images.perTurn),
    sessionImages: images,
  };
}

async function embedImages(
  models: Models,
  images: readonly AcceptedImage[],
  warnings: string[],
): Promise<Map<string, Float32Array>> {
  const embedder = models.image;
  if (!embedder) {
    if (images.length > 0)
      warnings.push(`the ${models.profile} profile has no image embedder: images are searchable by text only`);
    return new Map();
  }
  const vectors = await embedImagesInBatches(
    embedder,
    images.map((image) => image.data),
  );
  return new Map(images.flatMap((image, index) => (vectors[index] ? [[image.hash, vectors[index]]] : [])));
}

/** A vector under its space's name; nothing when the text was empty and so never embedded. */
function inSpace(space: string, vector: Float32Array | undefined): Record<string, Float32Array> {
  return vector ? { [space]: vector } : {};
}

/** Identity of a session's content: a retried write with the same content is a duplicate, not a conflict. */
function contentHash(
  session: SessionInput,
  images: readonly (readonly TurnImage[])[],
  { turnsOnly = false } = {},
): string {
  const canonical = {
    time: turnsOnly ? null : timeMs(session.time),
    source: turnsOnly ? null : (session.source ?? null),
    turns: session.turns.map((turn, index) => ({
      speaker: turn.speaker ?? null,
      role: turn.role ?? null,
      text: turn.text ?? "",
      time: turn.time ? timeMs(turn.time) : null,
      uri: turn.uri ?? null,
      metadata: turn.metadata ?? {},
      images: (images[index] ?? []).map(({ accepted, caption, origin }) => [accepted?.hash ?? null, caption, origin]),
    })),
  };
  return createHash("sha256").update(JSON.stringify(canonical)).digest("hex");
}

/** A time the schema already checked is RFC 3339. */
function timeMs(value: string): number {
  const ms = parseRfc3339(value);
  if (ms === null) throw new InvariantError("validated-time", `a validated time ${value} is not RFC 3339`);
  return ms;
}
