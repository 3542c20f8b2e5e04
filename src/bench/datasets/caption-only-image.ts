import type { ImageInput } from "../../ingest/session-input.ts";

/**
 * An image whose pixels are not available (LoCoMo web URLs, Mem-Gallery LFS pointers): the write path keeps a
 * caption-only image. `unavailable` says where the pixels would have been.
 */
export type CaptionOnlyImage = Extract<ImageInput, { readonly unavailable: string }>;

export function captionOnlyImage(unavailable: string, caption: string): CaptionOnlyImage {
  return { unavailable, caption };
}

export function isCaptionOnlyImage(image: unknown): image is CaptionOnlyImage {
  return typeof image === "object" && image !== null && "unavailable" in image;
}
