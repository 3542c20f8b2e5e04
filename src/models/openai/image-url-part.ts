import { InputError } from "../../core/errors.ts";

/** Images travel inline as data: URLs, the one image form every compatible server accepts. */
export function imageUrlPart(data: Uint8Array, mediaType: string): unknown {
  const base64 = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("base64");
  return { type: "image_url", image_url: { url: `data:${mediaType};base64,${base64}` } };
}

/** Readers receive bare bytes, but a data: URL must name its type; the magic numbers tell it. */
export function detectMediaType(image: Uint8Array): string {
  const startsWith = (bytes: readonly number[], offset = 0) =>
    bytes.every((byte, index) => image[offset + index] === byte);
  if (startsWith([0x89, 0x50, 0x4e, 0x47])) return "image/png";
  if (startsWith([0xff, 0xd8, 0xff])) return "image/jpeg";
  if (startsWith([0x52, 0x49, 0x46, 0x46]) && startsWith([0x57, 0x45, 0x42, 0x50], 8)) return "image/webp";
  if (startsWith([0x47, 0x49, 0x46, 0x38])) return "image/gif";
  throw new InputError("image", "unsupported image format (expected PNG, JPEG, WebP or GIF bytes)");
}
