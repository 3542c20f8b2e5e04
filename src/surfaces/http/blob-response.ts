import type { Context } from "hono";

/** Chunks of this size let a large image start flowing before the whole body is copied. */
const chunkBytes = 256 * 1024;

/**
 * Content-addressed bytes never change, so the ETag is the hash and the response may be cached
 * forever; `private` because access depends on the API key.
 */
export function blobResponse(c: Context, blob: { data: Uint8Array; mediaType: string }, tag: string): Response {
  const etag = `"${tag}"`;
  const headers = {
    ETag: etag,
    "Cache-Control": "private, max-age=31536000, immutable",
    "X-Content-Type-Options": "nosniff",
  };
  const match = c.req.header("if-none-match");
  if (match?.split(",").some((value) => value.trim().replace(/^W\//, "") === etag)) {
    return new Response(null, { status: 304, headers });
  }
  const { data } = blob;
  let offset = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= data.length) {
        controller.close();
        return;
      }
      controller.enqueue(data.subarray(offset, offset + chunkBytes));
      offset += chunkBytes;
    },
  });
  return new Response(stream, {
    status: 200,
    headers: { ...headers, "Content-Type": blob.mediaType, "Content-Length": String(data.length) },
  });
}
