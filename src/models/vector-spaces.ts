import type { VectorSpace } from "../store/records.ts";
import type { Models } from "./provider.ts";

/** The vector spaces a set of models writes and reads; a space's name carries the model id, so two models never share one. */
export interface VectorSpaces {
  /** Turn text. */
  readonly text: VectorSpace;
  /** Image-derived text (captions, OCR), so text finds images by meaning too. */
  readonly imageText: VectorSpace;
  /** Image pixels; null for a profile without an image embedder. */
  readonly image: VectorSpace | null;
}

export function vectorSpaces(models: Models): VectorSpaces {
  const image = models.image;
  const spaces: VectorSpaces = {
    text: { name: `text:${models.text.id}`, kind: "text", dimensions: models.text.dimensions },
    imageText: { name: `imagetext:${models.text.id}`, kind: "text", dimensions: models.text.dimensions },
    image: image ? { name: `image:${image.id}`, kind: "image", dimensions: image.dimensions } : null,
  };
  return Object.freeze(spaces);
}
