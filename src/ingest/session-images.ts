import type { Models } from "../models/provider.ts";
import { type AcceptedImage, type IntakeOptions, intakeImage } from "./image-intake.ts";
import type { SessionInput } from "./session-input.ts";

/** One image of a turn after intake; `accepted` is null for a caption-only image. */
export interface TurnImage {
  readonly accepted: AcceptedImage | null;
  readonly caption: string | null;
  readonly origin: string | null;
}

export interface SessionImages {
  /** Each distinct image once, by SHA-256. */
  readonly unique: ReadonlyMap<string, AcceptedImage>;
  /** Per turn, its images in input order. */
  readonly perTurn: readonly (readonly TurnImage[])[];
}

/** Loads and checks every image of a session (nothing is written); the first bad one is an `InputError`. */
export async function intakeSessionImages(session: SessionInput, options: IntakeOptions): Promise<SessionImages> {
  const unique = new Map<string, AcceptedImage>();
  const perTurn: TurnImage[][] = [];
  for (const [turnIndex, turn] of session.turns.entries()) {
    const list: TurnImage[] = [];
    for (const [imageIndex, image] of (turn.images ?? []).entries()) {
      if ("unavailable" in image) {
        list.push({ accepted: null, caption: image.caption.trim(), origin: image.unavailable });
        continue;
      }
      const accepted = await intakeImage(image, `turns[${turnIndex}].images[${imageIndex}]`, options);
      if (!unique.has(accepted.hash)) unique.set(accepted.hash, accepted);
      list.push({ accepted, caption: image.caption?.trim() || null, origin: accepted.origin });
    }
    perTurn.push(list);
  }
  return { unique, perTurn };
}

/** Image-derived text (OCR, captions from a vision model) by image hash. A failing reader degrades to a warning. */
export async function readImages(
  models: Models,
  images: readonly AcceptedImage[],
  warnings: string[],
): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  for (const image of images) {
    const parts: string[] = [];
    for (const reader of models.imageReaders) {
      try {
        const text = (await reader.readImage(image.data)).trim();
        if (text) parts.push(text);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        warnings.push(`${reader.produces} by ${reader.id} failed for image ${image.hash.slice(0, 12)}: ${reason}`);
      }
    }
    if (parts.length > 0) texts.set(image.hash, parts.join("\n"));
  }
  return texts;
}
