import { InputError } from "../core/errors.ts";
import type { AuditEvent, BlobRecord, ImageRef, RawNode, SessionRecord, VectorReplacement } from "./records.ts";

/**
 * Rows of the cold record tables as both backends return them (SQLite as they are, Postgres with
 * int8 parsed to numbers), typed once here, and their mappers to the records of `records.ts`.
 */

export interface SessionRow {
  rowid: number;
  id: string;
  session_key: string;
  time_ms: number;
  source: string | null;
  content_hash: string;
  turn_count: number;
  image_count: number;
  created_ms: number;
}

export interface RawNodeRow {
  rowid: number;
  id: string;
  session_rowid: number;
  session_id: string;
  session_key: string;
  turn: number;
  speaker: string | null;
  role: string | null;
  text: string;
  time_ms: number;
  source: string | null;
  uri: string | null;
  metadata: string;
}

export interface ImageRow {
  raw_node_rowid: number;
  ordinal: number;
  blob_hash: string | null;
  caption: string | null;
  derived_text: string | null;
  origin: string | null;
  media_type: string | null;
  bytes: number | null;
  width: number | null;
  height: number | null;
}

export interface BlobRow {
  hash: string;
  media_type: string;
  bytes: number;
  width: number;
  height: number;
}

export interface AuditRow {
  id: string;
  time_ms: number;
  action: string;
  subject: string;
  details: string;
}

/** The columns `RawNodeRow` reads, from `raw_nodes r JOIN sessions s`. */
export const rawNodeColumns = `r.rowid, r.id, r.session_rowid, s.id AS session_id, s.session_key, r.turn, r.speaker, r.role,
  r.text, r.time_ms, r.source, r.uri, r.metadata`;

export function toSession(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    key: row.session_key,
    time: new Date(row.time_ms).toISOString(),
    source: row.source,
    turnCount: row.turn_count,
    imageCount: row.image_count,
    contentHash: row.content_hash,
    createdAt: new Date(row.created_ms).toISOString(),
  };
}

export function toRawNode(row: RawNodeRow, images: ImageRef[]): RawNode {
  return {
    id: row.id,
    sessionId: row.session_id,
    sessionKey: row.session_key,
    turn: row.turn,
    speaker: row.speaker,
    role: row.role,
    text: row.text,
    time: new Date(row.time_ms).toISOString(),
    source: row.source,
    uri: row.uri,
    images,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
  };
}

export function toImageRef(row: ImageRow): ImageRef {
  return {
    ordinal: row.ordinal,
    hash: row.blob_hash,
    mediaType: row.media_type,
    bytes: row.bytes,
    width: row.width,
    height: row.height,
    caption: row.caption,
    derivedText: row.derived_text,
    origin: row.origin,
  };
}

export function toBlobRecord(row: BlobRow): BlobRecord {
  return { hash: row.hash, mediaType: row.media_type, bytes: row.bytes, width: row.width, height: row.height };
}

export function toAuditEvent(row: AuditRow): AuditEvent {
  return {
    id: row.id,
    time: new Date(row.time_ms).toISOString(),
    action: row.action,
    subject: row.subject,
    details: JSON.parse(row.details) as Record<string, unknown>,
  };
}

/**
 * `replaceVectors`' input check, the same on both backends: the write names every raw node of the
 * scope once and nothing else (`scopeIds`), so a swap never leaves a raw node without vectors.
 */
export function checkReplacementCoversScope(write: VectorReplacement, scopeIds: ReadonlySet<string>): void {
  const given = new Set(write.rawNodes.map((node) => node.rawNodeId));
  const unknown = [...given].filter((id) => !scopeIds.has(id));
  if (unknown.length > 0)
    throw new InputError("rawNodes", `${unknown.length} raw node(s) not in this scope, e.g. ${unknown[0]}`);
  if (given.size !== scopeIds.size || given.size !== write.rawNodes.length)
    throw new InputError(
      "rawNodes",
      `give every raw node of the scope once (${scopeIds.size}), got ${write.rawNodes.length}`,
    );
}
