import { NotFoundError } from "../../core/errors.ts";
import { vectorFromBytes } from "../../core/vectors.ts";
import { type BlobRow, toBlobRecord } from "../record-rows.ts";
import type { BlobRecord } from "../records.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";

/**
 * Image blobs as one scope sees them. Blobs belong to a tenant (stored once per tenant and hash);
 * a scope sees one only while one of its own raw nodes references it.
 */

/** Original bytes, or the 256 px WebP thumbnail; the record is the original's either way. */
export async function readBlob(
  context: ScopeContext,
  sql: Sql,
  hash: string,
  options: { readonly thumbnail?: boolean },
): Promise<{ record: BlobRecord; data: Uint8Array }> {
  const [row] = await sql.query<BlobRow & { data: Buffer }>(
    `SELECT b.hash, b.media_type, b.bytes, b.width, b.height, ${options.thumbnail ? "b.thumbnail" : "b.data"} AS data
     FROM blobs b
     WHERE b.tenant = $1 AND b.hash = $2
       AND EXISTS (SELECT 1 FROM raw_node_images i WHERE i.tenant = b.tenant AND i.blob_hash = b.hash AND i.scope_key = $3)`,
    [context.tenant, hash, context.key],
  );
  if (!row) throw new NotFoundError("blob", hash);
  return { record: toBlobRecord(row), data: new Uint8Array(row.data) };
}

/**
 * The image vector in `imageSpace` and the image-derived text of each hash a raw node of this
 * scope references; both depend only on the bytes. Other hashes are omitted, whoever else holds them.
 */
export async function knownImages(
  context: ScopeContext,
  sql: Sql,
  hashes: readonly string[],
  imageSpace: string | null,
): Promise<Map<string, { vector: Float32Array | null; derivedText: string | null }>> {
  if (hashes.length === 0) return new Map();
  const statement = knownImagesStatement(context, hashes, imageSpace);
  return knownImagesFrom(await sql.query<KnownImageRow>(statement.text, statement.values));
}

/** The statement `knownImages` runs (for at least one hash); `knownImagesFrom` reads its rows. */
export function knownImagesStatement(
  context: ScopeContext,
  hashes: readonly string[],
  imageSpace: string | null,
): { text: string; values: [string, string[], string, string | null] } {
  return {
    text: `SELECT h.hash,
       (SELECT v.vector FROM blob_vectors v WHERE v.tenant = $1 AND v.blob_hash = h.hash AND v.space = $4) AS vector,
       (SELECT i.derived_text FROM raw_node_images i
        WHERE i.tenant = $1 AND i.blob_hash = h.hash AND i.scope_key = $3 AND i.derived_text IS NOT NULL LIMIT 1) AS derived_text
     FROM unnest($2::text[]) AS h (hash)
     WHERE EXISTS (SELECT 1 FROM raw_node_images i WHERE i.tenant = $1 AND i.blob_hash = h.hash AND i.scope_key = $3)`,
    values: [context.tenant, [...new Set(hashes)], context.key, imageSpace],
  };
}

export interface KnownImageRow {
  readonly hash: string;
  readonly vector: Buffer | null;
  readonly derived_text: string | null;
}

export function knownImagesFrom(
  rows: readonly KnownImageRow[],
): Map<string, { vector: Float32Array | null; derivedText: string | null }> {
  return new Map(
    rows.map((row) => [
      row.hash,
      { vector: row.vector ? vectorFromBytes(row.vector) : null, derivedText: row.derived_text },
    ]),
  );
}
