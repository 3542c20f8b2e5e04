import { ConflictError, StoreError } from "../../core/errors.ts";
import { vectorBytes } from "../../core/vectors.ts";
import { IndexVersionConflict } from "../index-records.ts";
import { lexicalDocument } from "../lexical-text.ts";
import { type SessionRow, toSession } from "../record-rows.ts";
import type { CommitResult, RawNodeWrite, SessionRecord, SessionWrite } from "../records.ts";
import type { SessionIdentity } from "../store.ts";
import { writeAudits } from "./audit-events.ts";
import { applyPlan, lockIndex } from "./index-rows.ts";
import { insertLexicalDocuments } from "./lexical-documents.ts";
import { addLexicalStatistics } from "./lexical-statistics.ts";
import { rawNodeRowids } from "./read-raw-nodes.ts";
import { sessionRowByKey } from "./read-sessions.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";
import { type SpaceRow, textOrdinal, vectorLiteral } from "./vector-spaces.ts";

/**
 * Writes a session, its raw nodes, blobs (bytes and thumbnails, once per tenant), image
 * references, lexical documents, vectors, its index plan and audit events; the caller runs it in
 * one transaction, so a failure anywhere leaves nothing. It starts by taking the scope's write
 * lock: the key check, the plan's base version and the insert all see the same state.
 */
export async function commitSession(context: ScopeContext, sql: Sql, write: SessionWrite): Promise<CommitResult> {
  return writeSession(context, sql, write, null);
}

/**
 * A session copied from another store (`ScopedStore.importSession`): the same path as a commit,
 * with the identity kept and neither plan nor audit event. Returns whether anything was written.
 */
export async function importSession(
  context: ScopeContext,
  sql: Sql,
  write: SessionWrite,
  identity: SessionIdentity,
): Promise<boolean> {
  if (write.index.plan.ops.length > 0 || write.index.plan.audits.length > 0) {
    throw new StoreError("importSession", "an imported session carries no maintenance plan: restore the index after");
  }
  if (identity.rawNodeIds.length !== write.rawNodes.length) {
    throw new StoreError(
      "importSession",
      `${identity.rawNodeIds.length} raw-node ids for ${write.rawNodes.length} raw nodes`,
    );
  }
  return !(await writeSession(context, sql, write, identity)).duplicate;
}

async function writeSession(
  context: ScopeContext,
  sql: Sql,
  write: SessionWrite,
  identity: SessionIdentity | null,
): Promise<CommitResult> {
  const version = await lockIndex(context, sql);
  const existing = await sessionRowByKey(context, sql, write.key);
  if (existing) {
    if (identity && existing.id !== identity.sessionId) {
      throw new ConflictError(`session ${write.key} already exists in this scope under another id`);
    }
    if (write.append && !identity) return appendToSession(context, sql, version, existing, write);
    return duplicateOf(context, sql, existing, write);
  }
  if (identity) {
    const [taken] = await sql.query("SELECT 1 FROM sessions WHERE id = $1", [identity.sessionId]);
    if (taken) throw new ConflictError(`a session with id ${identity.sessionId} already exists in this store`);
  }
  // A stale plan is refused before any row is written: the writer re-plans sooner (applyPlan checks again).
  const { baseVersion } = write.index.plan;
  if (baseVersion !== null && baseVersion !== version) throw new IndexVersionConflict(baseVersion, version);

  const now = identity?.createdMs ?? context.store.now();
  const sessionId = identity?.sessionId ?? context.store.newId("ses");
  const imageCount = write.rawNodes.reduce((sum, node) => sum + node.images.length, 0);
  // The scope's registry row rides on the same round trip.
  const [session] = await sql.query<SessionRow>(
    `WITH registered AS (
       INSERT INTO scopes (scope_key, tenant) VALUES ($3, $2) ON CONFLICT (scope_key) DO NOTHING
     )
     INSERT INTO sessions (id, tenant, scope_key, session_key, time_ms, source, content_hash, turn_count, image_count, created_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *`,
    [
      sessionId,
      context.tenant,
      context.key,
      write.key,
      write.timeMs,
      write.source,
      write.contentHash,
      write.rawNodes.length,
      imageCount,
      now,
    ],
  );
  if (!session) throw new StoreError("commitSession", "the session insert returned no row");
  if (write.append && !identity?.parts) {
    await recordPart(context, sql, session.rowid, write.append.partKey, 0, write.rawNodes.length, now);
  }
  if (identity) {
    // A copied session keeps the parts it was appended in, so a retried append still reads as a duplicate.
    for (const part of identity.parts ?? []) {
      await recordPart(context, sql, session.rowid, part.partKey, part.firstTurn, part.turnCount, part.createdMs);
    }
    await writeRawNodes(context, sql, write, session.rowid, identity, 0);
    return { session: toSession(session), rawNodeIds: identity.rawNodeIds, entryIds: [], duplicate: false };
  }
  const { rawNodeIds, entryIds } = await writeRawNodes(context, sql, write, session.rowid, null, 0, {
    version,
    action: "session.add",
    sessionId,
    details: { images: imageCount },
  });
  return { session: toSession(session), rawNodeIds, entryIds, duplicate: false };
}

/**
 * Turns appended to a stored session: new raw nodes after its last turn, the earlier ones untouched,
 * the part recorded so a retry is acknowledged instead of appended twice, the index plan applied and
 * the append audited. The session's counts follow; its time and content hash stay those it was made with.
 */
async function appendToSession(
  context: ScopeContext,
  sql: Sql,
  version: number,
  existing: SessionRow,
  write: SessionWrite,
): Promise<CommitResult> {
  const partKey = write.append?.partKey ?? "";
  const [part] = await sql.query<{ first_turn: number; turn_count: number }>(
    "SELECT first_turn, turn_count FROM session_parts WHERE session_rowid = $1 AND part_key = $2",
    [existing.rowid, partKey],
  );
  if (part) {
    const rows = await sql.query<{ id: string }>(
      "SELECT id FROM raw_nodes WHERE session_rowid = $1 AND turn >= $2 AND turn < $3 ORDER BY turn",
      [existing.rowid, part.first_turn, part.first_turn + part.turn_count],
    );
    return { session: toSession(existing), rawNodeIds: rows.map((row) => row.id), entryIds: [], duplicate: true };
  }
  const { baseVersion } = write.index.plan;
  if (baseVersion !== null && baseVersion !== version) throw new IndexVersionConflict(baseVersion, version);
  // After the highest turn the session ever had: a forgotten last turn leaves its number unused.
  const [next] = await sql.query<{ first_turn: number }>(
    `SELECT greatest(
       coalesce((SELECT max(turn) + 1 FROM raw_nodes WHERE session_rowid = $1), 0),
       coalesce((SELECT max(first_turn + turn_count) FROM session_parts WHERE session_rowid = $1), 0),
       $2::int) AS first_turn`,
    [existing.rowid, existing.turn_count],
  );
  const firstTurn = Number(next?.first_turn ?? existing.turn_count);
  const now = context.store.now();
  const imageCount = write.rawNodes.reduce((sum, node) => sum + node.images.length, 0);
  await recordPart(context, sql, existing.rowid, partKey, firstTurn, write.rawNodes.length, now);
  const [session] = await sql.query<SessionRow>(
    "UPDATE sessions SET turn_count = turn_count + $2, image_count = image_count + $3 WHERE rowid = $1 RETURNING *",
    [existing.rowid, write.rawNodes.length, imageCount],
  );
  if (!session) throw new StoreError("commitSession", "session vanished inside its own transaction");
  const { rawNodeIds, entryIds } = await writeRawNodes(context, sql, write, existing.rowid, null, firstTurn, {
    version,
    action: "session.append",
    sessionId: existing.id,
    details: { firstTurn, images: imageCount },
  });
  return { session: toSession(session), rawNodeIds, entryIds, duplicate: false };
}

async function recordPart(
  context: ScopeContext,
  sql: Sql,
  sessionRowid: number,
  partKey: string,
  firstTurn: number,
  turnCount: number,
  now: number,
): Promise<void> {
  await sql.query(
    `INSERT INTO session_parts (session_rowid, tenant, part_key, first_turn, turn_count, created_ms)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [sessionRowid, context.tenant, partKey, firstTurn, turnCount, now],
  );
}

/** What a commit (not an import) adds after the raw nodes: the plan against `version`, and its audit event. */
interface PlannedWrite {
  readonly version: number;
  readonly action: "session.add" | "session.append";
  readonly sessionId: string;
  readonly details: Record<string, unknown>;
}

/**
 * Blobs, raw nodes numbered from `firstTurn`, their derived rows and, for a commit, the index plan
 * and audit events; the tenant's lexical statistics last.
 */
async function writeRawNodes(
  context: ScopeContext,
  sql: Sql,
  write: SessionWrite,
  sessionRowid: number,
  identity: SessionIdentity | null,
  firstTurn: number,
  planned?: PlannedWrite,
): Promise<{ rawNodeIds: string[]; entryIds: string[] }> {
  const spaces = new Map<string, SpaceRow>();
  for (const space of write.spaces) spaces.set(space.name, await context.store.spaces.ensure(sql, space));
  // One statement, in hash order, so two writers of one tenant storing the same new images wait for
  // each other, never deadlock.
  if (write.blobs.length > 0) {
    const blobs = [...write.blobs].sort((left, right) => (left.hash < right.hash ? -1 : 1));
    const column = <T>(pick: (blob: SessionWrite["blobs"][number]) => T) => blobs.map(pick);
    await sql.query(
      `INSERT INTO blobs (tenant, hash, media_type, bytes, width, height, data, thumbnail)
       SELECT $1, b.hash, b.media_type, b.bytes, b.width, b.height, b.data, b.thumbnail
       FROM unnest($2::text[], $3::text[], $4::bigint[], $5::int[], $6::int[], $7::bytea[], $8::bytea[])
         WITH ORDINALITY AS b (hash, media_type, bytes, width, height, data, thumbnail, position)
       ORDER BY b.position
       ON CONFLICT (tenant, hash) DO NOTHING`,
      [
        context.tenant,
        column((blob) => blob.hash),
        column((blob) => blob.mediaType),
        column((blob) => blob.bytes),
        column((blob) => blob.width),
        column((blob) => blob.height),
        column((blob) => blob.data),
        column((blob) => blob.thumbnail),
      ],
    );
  }
  const rowids = await insertRawNodes(context, sql, write, sessionRowid, identity, firstTurn);
  await insertDerivedRows(context, sql, write, sessionRowid, rowids, spaces);
  let entryIds: string[] = [];
  if (planned) {
    const { plan } = write.index;
    await applyPlan(context, sql, planned.version, plan, write.index.spaces, async (pointers) => {
      const stored = await rawNodeRowids(
        context,
        sql,
        pointers.filter((pointer) => !pointer.startsWith("@")),
      );
      return pointers.map((pointer) => {
        const position = pointer.startsWith("@") ? Number(pointer.slice(1)) : Number.NaN;
        const rowid = Number.isInteger(position) ? rowids[position]?.rowid : stored.get(pointer);
        if (rowid === undefined) throw new StoreError("commitSession", `index pointer ${pointer} names no raw node`);
        return rowid;
      });
    });
    entryIds = [...new Set(plan.ops.map((op) => (op.op === "put" ? op.entry.id : op.entryId)))];
    await writeAudits(context, sql, [
      ...plan.audits,
      {
        action: planned.action,
        subject: planned.sessionId,
        details: {
          sessionKey: write.key,
          rawNodes: rowids.length,
          ...planned.details,
          blobs: write.blobs.length,
          entries: entryIds,
        },
      },
    ]);
  }
  // Last: the tenant's shared statistics rows stay locked only until the commit that follows.
  await addLexicalStatistics(
    context,
    sql,
    rowids.map((node) => node.rowid),
  );
  return { rawNodeIds: rowids.map((node) => node.id), entryIds };
}

/** The same session written twice is acknowledged again; the same key with other content is a conflict. */
async function duplicateOf(
  context: ScopeContext,
  sql: Sql,
  existing: SessionRow,
  write: SessionWrite,
): Promise<CommitResult> {
  if (existing.content_hash !== write.contentHash) {
    throw new ConflictError(`session ${write.key} already exists in this scope with different content`);
  }
  const rows = await sql.query<{ id: string }>(
    "SELECT id FROM raw_nodes WHERE scope_key = $1 AND session_rowid = $2 ORDER BY turn",
    [context.key, existing.rowid],
  );
  const session: SessionRecord = toSession(existing);
  return { session, rawNodeIds: rows.map((row) => row.id), entryIds: [], duplicate: true };
}

/** All raw nodes of the session in one statement; returns their ids and rowids in write order. */
async function insertRawNodes(
  context: ScopeContext,
  sql: Sql,
  write: SessionWrite,
  sessionRowid: number,
  identity: SessionIdentity | null,
  firstTurn: number,
): Promise<{ id: string; rowid: number }[]> {
  if (write.rawNodes.length === 0) return [];
  const ids = identity ? [...identity.rawNodeIds] : write.rawNodes.map(() => context.store.newId("rn"));
  const column = <T>(pick: (node: SessionWrite["rawNodes"][number]) => T) => write.rawNodes.map(pick);
  const rows = await sql.query<{ id: string; rowid: number }>(
    `INSERT INTO raw_nodes (id, tenant, scope_key, session_rowid, turn, speaker, role, text, time_ms, source, uri, metadata)
     SELECT n.id, $1, $2, $3, n.turn, n.speaker, n.role, n.text, n.time_ms, n.source, n.uri, n.metadata
     FROM unnest($4::text[], $5::int[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[], $11::text[], $12::text[])
       WITH ORDINALITY AS n (id, turn, speaker, role, text, time_ms, source, uri, metadata, position)
     ORDER BY n.position
     RETURNING id, rowid`,
    [
      context.tenant,
      context.key,
      sessionRowid,
      ids,
      column((node) => firstTurn + node.turn),
      column((node) => node.speaker),
      column((node) => node.role),
      column((node) => node.text),
      column((node) => node.timeMs),
      column((node) => node.source),
      column((node) => node.uri),
      column((node) => JSON.stringify(node.metadata)),
    ],
  );
  const rowidOf = new Map(rows.map((row) => [row.id, row.rowid]));
  return ids.map((id) => {
    const rowid = rowidOf.get(id);
    if (rowid === undefined) throw new StoreError("commitSession", `raw node ${id} was not inserted`);
    return { id, rowid };
  });
}

/** Image references, cached image vectors, lexical documents and vectors of the session's raw nodes. */
async function insertDerivedRows(
  context: ScopeContext,
  sql: Sql,
  write: SessionWrite,
  sessionRowid: number,
  nodes: readonly { rowid: number }[],
  spaces: ReadonlyMap<string, SpaceRow>,
): Promise<void> {
  const images = new Columns(6);
  const documents = new Columns(3);
  const cached = new Columns(3);
  const vectors = new Map<string, Columns>();
  const addVector = (space: string, rowid: number, ordinal: number, node: RawNodeWrite, vector: Float32Array) => {
    if (!spaces.has(space)) throw new StoreError("commitSession", `vector for undeclared space ${space}`);
    const columns = vectors.get(space) ?? new Columns(5);
    columns.add(rowid, ordinal, node.timeMs, node.speaker, vectorLiteral(vector));
    vectors.set(space, columns);
  };
  write.rawNodes.forEach((node, position) => {
    const rowid = nodes[position]?.rowid;
    if (rowid === undefined) throw new StoreError("commitSession", "raw node rows out of step with the write");
    documents.add(rowid, "text", lexicalDocument(node.indexText ?? node.text));
    const imageText = node.images
      .map((image) => [image.caption, image.derivedText].filter(Boolean).join(" "))
      .join(" ");
    if (imageText.trim()) documents.add(rowid, "imageText", lexicalDocument(imageText));
    for (const [space, vector] of Object.entries(node.textVectors)) addVector(space, rowid, textOrdinal, node, vector);
    node.images.forEach((image, ordinal) => {
      images.add(rowid, ordinal, image.hash, image.caption, image.derivedText, image.origin);
      for (const [space, vector] of Object.entries(node.imageVectors[ordinal] ?? {})) {
        addVector(space, rowid, ordinal, node, vector);
        if (image.hash) cached.add(image.hash, space, Buffer.from(vectorBytes(vector)));
      }
    });
  });
  const { tenant, key } = context;
  if (images.size > 0) {
    await sql.query(
      `INSERT INTO raw_node_images (raw_node_rowid, ordinal, tenant, scope_key, blob_hash, caption, derived_text, origin)
       SELECT i.rowid, i.ordinal, $1, $2, i.hash, i.caption, i.derived, i.origin
       FROM unnest($3::bigint[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[])
         AS i (rowid, ordinal, hash, caption, derived, origin)`,
      [tenant, key, ...images.values],
    );
  }
  if (cached.size > 0) {
    await sql.query(
      `INSERT INTO blob_vectors (tenant, blob_hash, space, vector)
       SELECT DISTINCT ON (c.hash, c.space) $1, c.hash, c.space, c.vector
       FROM unnest($2::text[], $3::text[], $4::bytea[]) AS c (hash, space, vector)
       ON CONFLICT (tenant, blob_hash, space) DO NOTHING`,
      [tenant, ...cached.values],
    );
  }
  if (documents.size > 0) {
    const [rowids = [], fields = [], bodies = []] = documents.values;
    await insertLexicalDocuments(sql, context, { rowids, fields, bodies });
  }
  for (const [name, columns] of vectors) {
    const space = spaces.get(name);
    if (!space) continue;
    await sql.query(
      `INSERT INTO ${space.table_name} (raw_node_rowid, ordinal, tenant, scope_key, session_rowid, time_ms, speaker, embedding)
       SELECT v.rowid, v.ordinal, $1, $2, $3, v.time_ms, v.speaker, v.embedding::vector(${space.dimensions})
       FROM unnest($4::bigint[], $5::int[], $6::bigint[], $7::text[], $8::text[])
         AS v (rowid, ordinal, time_ms, speaker, embedding)`,
      [tenant, key, sessionRowid, ...columns.values],
    );
  }
}

/** Rows gathered column by column, for one `INSERT … SELECT FROM unnest(…)` per table. */
class Columns {
  readonly values: unknown[][];

  constructor(width: number) {
    this.values = Array.from({ length: width }, () => []);
  }

  add(...row: unknown[]): void {
    for (const [index, value] of row.entries()) this.values[index]?.push(value);
  }

  get size(): number {
    return this.values[0]?.length ?? 0;
  }
}
