import { NotFoundError, StoreError } from "../../core/errors.ts";
import { vectorFromBytes } from "../../core/vectors.ts";
import { type BlobRow, toBlobRecord } from "../record-rows.ts";
import type { BlobRecord } from "../records.ts";
import { blobKey } from "./blob-files.ts";
import { bytesOrUndefined, stringOrNull } from "./record-rows.ts";
import type { ScopeContext } from "./scope-context.ts";
import { statement } from "./statements.ts";
import { tenantExists } from "./tenants.ts";

/** Image blobs as one scope sees them, and what is already derived from known images. */

/** Original bytes, or the 256 px WebP thumbnail; the record is the original's either way. */
export function readBlob(
  context: ScopeContext,
  hash: string,
  options: { readonly thumbnail?: boolean },
): { record: BlobRecord; data: Uint8Array } {
  const { record, tenant } = blobInScope(context, hash);
  const operation = options.thumbnail ? "readThumbnail" : "readBlob";
  try {
    const files = context.store.files;
    const key = blobKey(tenant, hash);
    return { record, data: options.thumbnail ? files.readThumbnail(key) : files.read(key) };
  } catch (error) {
    throw new StoreError(operation, error);
  }
}

/**
 * A scope's use of an image, one with derived text if any (parameters: scope key, hash). Read in the
 * order of `raw_node_images_by_blob_text` (migration 14), the first use in scope is the answer.
 */
export const knownImageUse = `SELECT i.derived_text FROM raw_node_images i JOIN raw_nodes r ON r.rowid = i.raw_node_rowid
     WHERE r.scope_key = ? AND i.blob_hash = ? ORDER BY i.derived_text IS NULL LIMIT 1`;

/**
 * The image vector in `imageSpace` and the image-derived text of each hash a raw node of this scope
 * uses; both depend only on the bytes. Only the scope's own images answer, so a write cannot learn
 * whether another scope holds an image by how fast it goes. Unknown hashes are omitted.
 */
export function knownImages(
  context: ScopeContext,
  hashes: readonly string[],
  imageSpace: string | null,
): Map<string, { vector: Float32Array | null; derivedText: string | null }> {
  const known = new Map<string, { vector: Float32Array | null; derivedText: string | null }>();
  if (!tenantExists(context.db, context.tenantStorage)) return known;
  const tenant = context.tenantStorage;
  const vectorOf = statement(
    context.db,
    "SELECT vector FROM blob_vectors WHERE tenant = ? AND blob_hash = ? AND space = ?",
    "pluck",
  );
  const usesOf = statement(context.db, knownImageUse);
  for (const hash of hashes) {
    const use = usesOf.get(context.key, hash) as { derived_text: string | null } | undefined;
    if (!use) continue;
    const bytes = imageSpace ? bytesOrUndefined(vectorOf.get(tenant.token, hash, imageSpace)) : undefined;
    // Copy: the Buffer may be a view into a pooled allocation.
    const vector = bytes ? vectorFromBytes(bytes) : null;
    known.set(hash, { vector, derivedText: stringOrNull(use.derived_text) });
  }
  return known;
}

/** A blob is visible to a scope only while one of the scope's raw nodes references it. */
function blobInScope(context: ScopeContext, hash: string): { record: BlobRecord; tenant: string } {
  const row = context.db
    .prepare(
      `SELECT b.tenant, b.hash, b.media_type, b.bytes, b.width, b.height FROM blobs b
       WHERE b.tenant = ? AND b.hash = ? AND EXISTS (SELECT 1 FROM raw_node_images i JOIN raw_nodes r ON r.rowid = i.raw_node_rowid
                                                   WHERE i.blob_hash = b.hash AND r.scope_key = ?)`,
    )
    .get(context.tenantStorage.token, hash, context.key) as (BlobRow & { tenant: string }) | undefined;
  if (!row) throw new NotFoundError("blob", hash);
  return { record: toBlobRecord(row), tenant: row.tenant };
}
