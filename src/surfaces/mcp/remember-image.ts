import { isAbsolute } from "node:path";
import { InputError } from "../../core/errors.ts";
import type { ImageInput } from "../../ingest/session-input.ts";

/** An image as a host model sends it: exactly one of `url`, `path` or `data` (base64). */
export interface RememberImage {
  readonly url?: string;
  readonly path?: string;
  readonly data?: string;
  readonly mediaType?: string;
  readonly caption?: string;
}

/** What `cairn_remember` may do with an image a host model sends: the server's policy, not the SDK's. */
export interface RememberImagePolicy {
  /** The folder a relative `path` is read from; without it paths are refused. */
  readonly imageFolder?: string;
  /** Whether image URLs may be fetched (the memory must allow remote images as well). */
  readonly imageUrls: boolean;
}

/**
 * The image of a `cairn_remember` call, checked against the server's policy: a URL only when the
 * server fetches URLs, a path only relative to its image folder, base64 data always.
 */
export function rememberImage(image: RememberImage, policy: RememberImagePolicy): ImageInput {
  const sources = (["url", "path", "data"] as const).filter((name) => image[name] !== undefined);
  if (sources.length !== 1) throw new InputError("image", "give exactly one of url, path or data");
  const caption = image.caption ? { caption: image.caption } : {};
  if (image.url !== undefined) {
    if (!policy.imageUrls) {
      throw new InputError("image.url", "this server does not fetch image URLs (start it with --allow-remote-images)");
    }
    return { url: image.url, ...caption };
  }
  if (image.path !== undefined) {
    if (!policy.imageFolder) {
      throw new InputError("image.path", "this server reads no local files (start it with --image-folder DIR)");
    }
    if (isAbsolute(image.path)) throw new InputError("image.path", "give a path relative to the server's image folder");
    return { path: image.path, ...caption };
  }
  return { data: image.data as string, ...(image.mediaType ? { mediaType: image.mediaType } : {}), ...caption };
}
