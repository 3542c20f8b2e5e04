import { NotFoundError, StoreError } from "../../core/errors.ts";
import { vectorFromBytes } from "../../core/vectors.ts";
import type { BlobRecord } from "../records.ts";
import { type BlobRow, bytesOrUndefined, stringOrNull, toBlobRecord } from "./record-rows.ts";
import type { ScopeContext } from "./scope-context.ts";

/** Image blobs as one scope sees them, and what is already derived from known images. */

/** Original bytes, or the 256 px WebP thumbnail; the record is the original's either way. */
export function readBlob(
  context: ScopeContext,
  hash: string,
  options: { readonly thumbnail?: boolean },
): { record: BlobRecord; data: Uint8Array } {
  const record = blobInScope(context, hash);
  const operation = options.thumbnail ? "readThumbnail" : "readBlob";
  try {
    const files = context.store.files;
    return { record, data: options.thumbnail ? files.readThumbnail(hash) : files.read(hash) };
  } catch (error) {
    throw new StoreError(operation, error);
  }
}

/**
 * The image vector in `imageSpace` and the image-derived text of each known hash; both depend only
 * on the bytes, so they are shared across scopes like the blob itself. Unknown hashes are omitted.
 */
export function knownImages(
  context: ScopeContext,
  hashes: readonly string[],
  imageSpace: string | null,
): Map<string, { vector: Float32Array | null; derivedText: string | null }> {
  const vectorOf = context.db.prepare("SELECT vector FROM blob_vectors WHERE blob_hash = ? AND space = ?").pluck();
  const textOf = context.db
    .prepare("SELECT derived_text FROM raw_node_images WHERE blob_hash = ? AND derived_text IS NOT NULL LIMIT 1")
    .pluck();
  const known = new Map<string, { vector: Float32Array | null; derivedText: string | null }>();
  for (const hash of hashes) {
    if (!context.store.hasBlob(hash)) continue;
    const bytes = imageSpace ? bytesOrUndefined(vectorOf.get(hash, imageSpace)) : undefined;
    // Copy: the Buffer may be a view into a pooled allocation.
    const vector = bytes ? vectorFromBytes(bytes) : null;
    known.set(hash, { vector, derivedText: stringOrNull(textOf.get(hash)) });
  }
  return known;
}

/** A blob is visible to a scope only while one of the scope's raw nodes references it. */
function blobInScope(context: ScopeContext, hash: string): BlobRecord {
  const row = context.db
    .prepare(
      `SELECT b.hash, b.media_type, b.bytes, b.width, b.height FROM blobs b
       WHERE b.hash = ? AND EXISTS (SELECT 1 FROM raw_node_images i JOIN raw_nodes r ON r.rowid = i.raw_node_rowid
                                    WHERE i.blob_hash = b.hash AND r.scope_key = ?)`,
    )
    .get(hash, context.key) as BlobRow | undefined;
  if (!row) throw new NotFoundError("blob", hash);
  return toBlobRecord(row);
}
