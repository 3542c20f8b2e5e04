import type { Statement } from "better-sqlite3";
import { ConflictError, StoreError } from "../../core/errors.ts";
import { vectorBytes } from "../../core/vectors.ts";
import { BatchPlans } from "../batch-writes.ts";
import { IndexVersionConflict, pendingPosition } from "../index-records.ts";
import { lexicalDocument } from "../lexical-text.ts";
import { type SessionRow, toSession } from "../record-rows.ts";
import type { CommitResult, SessionRecord, SessionWrite, VectorSpace } from "../records.ts";
import type { SessionIdentity } from "../store.ts";
import { writeAudit } from "./audit-events.ts";
import { blobKey } from "./blob-files.ts";
import { applyPlan } from "./index-rows.ts";
import { LexicalWrites } from "./lexical-index.ts";
import { rawNodeRowid } from "./read-raw-nodes.ts";
import { sessionById, sessionRowByKey } from "./read-sessions.ts";
import { strings } from "./record-rows.ts";
import type { ScopeContext } from "./scope-context.ts";
import { statement } from "./statements.ts";
import { ensureTenant, type TenantStorage } from "./tenants.ts";
import { imageSlots, plainTableOf, type VectorRow } from "./vector-rows.ts";

/** A vector space of the write and the vec0 table holding it. */
interface SpaceTable {
  readonly space: VectorSpace;
  readonly table: string;
}

/**
 * Atomically writes a session, its raw nodes, blob references, FTS and vector rows, its index plan
 * and audit events. Blob files land first, journalled, so a failed commit leaves none behind.
 */
export function commitSession(context: ScopeContext, write: SessionWrite): CommitResult {
  return inTransaction(context, [write], "commitSession", (vectors, lexical) =>
    writeSession(context, write, null, vectors, lexical),
  );
}

/**
 * Several sessions in one transaction, in order, each as `commitSession` would write it: all of them
 * or none, and one WAL commit (one fsync) for the lot. Plans point across the batch as `BatchPlans`
 * says; each is checked against the index version the writes before it left.
 */
export function commitSessions(context: ScopeContext, writes: readonly SessionWrite[]): CommitResult[] {
  const batch = new BatchPlans(writes);
  return inTransaction(context, writes, "commitSessions", (vectors, lexical) =>
    writes.map((_, index) => {
      const result = writeSession(context, batch.write(index), null, vectors, lexical);
      batch.committed(index, result.rawNodeIds);
      return result;
    }),
  );
}

/**
 * A session copied from another store (`ScopedStore.importSession`): the same path as a commit,
 * with the identity kept and neither plan nor audit event. Returns whether anything was written.
 */
export function importSession(context: ScopeContext, write: SessionWrite, identity: SessionIdentity): boolean {
  if (write.index.plan.ops.length > 0 || write.index.plan.audits.length > 0) {
    throw new StoreError("importSession", "an imported session carries no maintenance plan: restore the index after");
  }
  if (identity.rawNodeIds.length !== write.rawNodes.length) {
    throw new StoreError(
      "importSession",
      `${identity.rawNodeIds.length} raw-node ids for ${write.rawNodes.length} raw nodes`,
    );
  }
  const result = inTransaction(context, [write], "importSession", (vectors, lexical) =>
    writeSession(context, write, identity, vectors, lexical),
  );
  return !result.duplicate;
}

/**
 * Runs `work` in one IMMEDIATE transaction with the writes' blob files in place: written before the
 * lock (fsync is slow), journalled so a failed commit leaves none behind, and checked again under
 * the lock. `work` collects the vec0 rows it writes for the ANN indexes, fed once it has committed.
 */
function inTransaction<Result>(
  context: ScopeContext,
  writes: readonly SessionWrite[],
  operation: string,
  work: (vectors: VectorRow[], lexical: LexicalWrites) => Result,
): Result {
  const { store } = context;
  const files = store.files;
  // Files go in the tenant's folder now; its tables are created inside the transaction if new.
  const keyOf = (hash: string) => blobKey(context.tenantStorage.token, hash);
  const blobs = [...new Map(writes.flatMap((write) => write.blobs).map((blob) => [blob.hash, blob])).values()];
  const newBlobs = blobs.filter((blob) => !store.hasBlob(keyOf(blob.hash)));
  // Every blob is journalled, new or not: one that a forget releases before the lock is written
  // again inside the transaction, and a rollback must take that file away too.
  const journal = files.begin(blobs.map((blob) => keyOf(blob.hash)));
  try {
    // Written before the lock (fsync is slow); checked again under it, below.
    for (const blob of newBlobs) files.put(keyOf(blob.hash), blob.data, blob.thumbnail);
    const vectors: VectorRow[] = [];
    // IMMEDIATE takes the write lock first, so the key check and the insert see the same state even
    // with concurrent writers; creating a new vector space inside it keeps a failed commit from
    // leaving an empty table behind.
    const result = context.db
      .transaction(() => {
        // Files are deleted only under this lock (BlobFiles): what exists now stays until this
        // commits, and a file deleted since the check above (another process's forget released the
        // blob) is written again, so no committed image lacks its bytes.
        for (const blob of blobs) files.put(keyOf(blob.hash), blob.data, blob.thumbnail);
        // The lexical index takes the whole transaction's rows at once: one upsert per term for the lot.
        const lexical = new LexicalWrites();
        const result = work(vectors, lexical);
        lexical.flush(context.db, context.tenantStorage);
        return result;
      })
      .immediate();
    store.vectorIndexes.afterCommit(context.key, vectors);
    return result;
  } catch (error) {
    if (error instanceof ConflictError || error instanceof IndexVersionConflict) throw error;
    throw new StoreError(operation, error);
  } finally {
    files.settle(journal, (key) => store.hasBlob(key));
  }
}

/** One session's rows, inside the caller's transaction. */
function writeSession(
  context: ScopeContext,
  write: SessionWrite,
  identity: SessionIdentity | null,
  vectors: VectorRow[],
  lexical: LexicalWrites,
): CommitResult {
  const { store } = context;
  const tenant = context.tenantStorage;
  const existing = sessionRowByKey(context, write.key);
  if (existing) {
    if (identity && existing.id !== identity.sessionId) {
      throw new ConflictError(`session ${write.key} already exists in this scope under another id`);
    }
    if (write.append && !identity) {
      const tables = write.spaces.map((space) => ({ space, table: store.ensureSpace(space) }));
      return appendToSession(context, tenant, existing, write, tables, vectors, lexical);
    }
    return duplicateOf(context, toSession(existing), write);
  }
  if (identity && statement(context.db, "SELECT 1 FROM sessions WHERE id = ?").get(identity.sessionId)) {
    throw new ConflictError(`a session with id ${identity.sessionId} already exists in this store`);
  }
  ensureTenant(context.db, context.tenant);
  const tables = write.spaces.map((space) => ({ space, table: store.ensureSpace(space) }));
  return insertSession(context, tenant, write, tables, vectors, identity, lexical);
}

/** The same session written twice is acknowledged again; the same key with other content is a conflict. */
function duplicateOf(context: ScopeContext, existing: SessionRecord, write: SessionWrite): CommitResult {
  if (existing.contentHash !== write.contentHash) {
    throw new ConflictError(`session ${write.key} already exists in this scope with different content`);
  }
  const rawNodeIds = strings(
    statement(
      context.db,
      "SELECT r.id FROM raw_nodes r JOIN sessions s ON s.rowid = r.session_rowid WHERE s.id = ? ORDER BY r.turn",
      "pluck",
    ).all(existing.id),
  );
  return { session: existing, rawNodeIds, entryIds: [], duplicate: true };
}

/** `vectors` collects the vec0 rows written, for the ANN indexes once the transaction has committed. */
function insertSession(
  context: ScopeContext,
  tenant: TenantStorage,
  write: SessionWrite,
  tables: readonly SpaceTable[],
  vectors: VectorRow[],
  identity: SessionIdentity | null,
  lexical: LexicalWrites,
): CommitResult {
  const now = identity?.createdMs ?? context.store.now();
  const sessionId = identity?.sessionId ?? context.store.newId("ses");
  const imageCount = write.rawNodes.reduce((sum, node) => sum + node.images.length, 0);
  const sessionRowid = Number(
    statement(
      context.db,
      `INSERT INTO sessions (id, scope_key, session_key, time_ms, source, content_hash, turn_count, image_count, created_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      sessionId,
      context.key,
      write.key,
      write.timeMs,
      write.source,
      write.contentHash,
      write.rawNodes.length,
      imageCount,
      now,
    ).lastInsertRowid,
  );
  const insertBlob = statement(
    context.db,
    "INSERT OR IGNORE INTO blobs (tenant, hash, media_type, bytes, width, height) VALUES (?, ?, ?, ?, ?, ?)",
  );
  for (const blob of write.blobs) {
    insertBlob.run(tenant.token, blob.hash, blob.mediaType, blob.bytes, blob.width, blob.height);
  }
  const { rawNodeIds, rowids } = insertRawNodes(
    context,
    tenant,
    write,
    sessionRowid,
    tables,
    vectors,
    identity,
    0,
    lexical,
  );
  if (write.append && !identity?.parts)
    recordPart(context, sessionRowid, write.append.partKey, 0, rawNodeIds.length, now);
  if (identity) {
    // A copied session keeps the parts it was appended in, so a retried append still reads as a duplicate.
    for (const part of identity.parts ?? []) {
      recordPart(context, sessionRowid, part.partKey, part.firstTurn, part.turnCount, part.createdMs);
    }
    const session = sessionById(context, sessionId);
    if (!session) throw new StoreError("importSession", "session vanished inside its own transaction");
    return { session, rawNodeIds, entryIds: [], duplicate: false };
  }
  const entryIds = applyIndexPlan(context, write, rowids);
  writeAudit(context, "session.add", sessionId, {
    sessionKey: write.key,
    rawNodes: rawNodeIds.length,
    images: imageCount,
    blobs: write.blobs.length,
    entries: entryIds,
  });
  const session = sessionById(context, sessionId);
  if (!session) throw new StoreError("commitSession", "session vanished inside its own transaction");
  return { session, rawNodeIds, entryIds, duplicate: false };
}

/**
 * Turns appended to a stored session: new raw nodes after its last turn, the earlier ones untouched,
 * the part recorded so a retry is acknowledged instead of appended twice, the index plan applied and
 * the append audited. The session's counts follow; its time and content hash stay those it was made with.
 */
function appendToSession(
  context: ScopeContext,
  tenant: TenantStorage,
  existing: SessionRow,
  write: SessionWrite,
  tables: readonly SpaceTable[],
  vectors: VectorRow[],
  lexical: LexicalWrites,
): CommitResult {
  const partKey = write.append?.partKey ?? "";
  const part = statement(
    context.db,
    "SELECT first_turn, turn_count FROM session_parts WHERE session_rowid = ? AND part_key = ?",
  ).get(existing.rowid, partKey) as { first_turn: number; turn_count: number } | undefined;
  if (part) {
    const rawNodeIds = strings(
      statement(
        context.db,
        "SELECT id FROM raw_nodes WHERE session_rowid = ? AND turn >= ? AND turn < ? ORDER BY turn",
        "pluck",
      ).all(existing.rowid, part.first_turn, part.first_turn + part.turn_count),
    );
    return { session: toSession(existing), rawNodeIds, entryIds: [], duplicate: true };
  }
  // After the highest turn the session ever had: a forgotten last turn leaves its number unused.
  const firstTurn = Number(
    statement(
      context.db,
      `SELECT max(coalesce((SELECT max(turn) + 1 FROM raw_nodes WHERE session_rowid = @session), 0),
                    coalesce((SELECT max(first_turn + turn_count) FROM session_parts WHERE session_rowid = @session), 0),
                    @count)`,
      "pluck",
    ).get({ session: existing.rowid, count: existing.turn_count }),
  );
  const insertBlob = statement(
    context.db,
    "INSERT OR IGNORE INTO blobs (tenant, hash, media_type, bytes, width, height) VALUES (?, ?, ?, ?, ?, ?)",
  );
  for (const blob of write.blobs) {
    insertBlob.run(tenant.token, blob.hash, blob.mediaType, blob.bytes, blob.width, blob.height);
  }
  const { rawNodeIds, rowids } = insertRawNodes(
    context,
    tenant,
    write,
    existing.rowid,
    tables,
    vectors,
    null,
    firstTurn,
    lexical,
  );
  const now = context.store.now();
  recordPart(context, existing.rowid, partKey, firstTurn, rawNodeIds.length, now);
  const imageCount = write.rawNodes.reduce((sum, node) => sum + node.images.length, 0);
  statement(
    context.db,
    "UPDATE sessions SET turn_count = turn_count + ?, image_count = image_count + ? WHERE rowid = ?",
  ).run(rawNodeIds.length, imageCount, existing.rowid);
  const entryIds = applyIndexPlan(context, write, rowids);
  writeAudit(context, "session.append", existing.id, {
    sessionKey: write.key,
    firstTurn,
    rawNodes: rawNodeIds.length,
    images: imageCount,
    blobs: write.blobs.length,
    entries: entryIds,
  });
  const session = sessionById(context, existing.id);
  if (!session) throw new StoreError("commitSession", "session vanished inside its own transaction");
  return { session, rawNodeIds, entryIds, duplicate: false };
}

function recordPart(
  context: ScopeContext,
  sessionRowid: number,
  partKey: string,
  firstTurn: number,
  turnCount: number,
  now: number,
): void {
  statement(
    context.db,
    "INSERT INTO session_parts (session_rowid, part_key, first_turn, turn_count, created_ms) VALUES (?, ?, ?, ?, ?)",
  ).run(sessionRowid, partKey, firstTurn, turnCount, now);
}

/** Raw nodes with their FTS rows, images and vectors; returns their ids and rowids in write order. */
function insertRawNodes(
  context: ScopeContext,
  tenant: TenantStorage,
  write: SessionWrite,
  sessionRowid: number,
  tables: readonly SpaceTable[],
  vectors: VectorRow[],
  identity: SessionIdentity | null,
  firstTurn: number,
  lexical: LexicalWrites,
): { rawNodeIds: string[]; rowids: number[] } {
  const { db, key, scopeToken } = context;
  const insertNode = statement(
    db,
    `INSERT INTO raw_nodes (id, scope_key, session_rowid, turn, speaker, role, text, time_ms, source, uri, metadata)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertImage = statement(
    db,
    "INSERT INTO raw_node_images (raw_node_rowid, ordinal, blob_hash, caption, derived_text, origin) VALUES (?, ?, ?, ?, ?, ?)",
  );
  const insertText = statement(db, `INSERT INTO ${tenant.textTable} (rowid, body) VALUES (?, ?)`);
  const insertImageText = statement(db, `INSERT INTO ${tenant.imageTextTable} (rowid, body) VALUES (?, ?)`);
  const cacheVector = statement(
    db,
    "INSERT OR IGNORE INTO blob_vectors (tenant, blob_hash, space, vector) VALUES (?, ?, ?, ?)",
  );
  const insertVector = vectorInserter(context, tables, vectors);

  const rawNodeIds: string[] = [];
  const rowids: number[] = [];
  for (const [position, node] of write.rawNodes.entries()) {
    const id = identity?.rawNodeIds[position] ?? context.store.newId("rn");
    const rowid = Number(
      insertNode.run(
        id,
        key,
        sessionRowid,
        firstTurn + node.turn,
        node.speaker,
        node.role,
        node.text,
        node.timeMs,
        node.source,
        node.uri,
        JSON.stringify(node.metadata),
      ).lastInsertRowid,
    );
    rawNodeIds.push(id);
    rowids.push(rowid);
    const body = `${scopeToken} ${lexicalDocument(node.indexText ?? node.text)}`;
    insertText.run(BigInt(rowid), body);
    lexical.add("text", { rowid, scopeKey: key, body });
    const imageText = node.images
      .map((image) => [image.caption, image.derivedText].filter(Boolean).join(" "))
      .join(" ");
    if (imageText.trim()) {
      const imageBody = `${scopeToken} ${lexicalDocument(imageText)}`;
      insertImageText.run(BigInt(rowid), imageBody);
      lexical.add("imageText", { rowid, scopeKey: key, body: imageBody });
    }
    const meta = [key, BigInt(sessionRowid), BigInt(node.timeMs), node.speaker ?? ""] as const;
    for (const [space, vector] of Object.entries(node.textVectors)) insertVector(space, rowid, vector, meta);
    node.images.forEach((image, ordinal) => {
      insertImage.run(rowid, ordinal, image.hash, image.caption, image.derivedText, image.origin);
      for (const [space, vector] of Object.entries(node.imageVectors[ordinal] ?? {})) {
        insertVector(space, rowid * imageSlots + ordinal, vector, meta);
        if (image.hash) cacheVector.run(tenant.token, image.hash, space, vectorBytes(vector));
      }
    });
  }
  return { rawNodeIds, rowids };
}

/** Writes one vec0 row of a declared space and records it in `vectors`. */
function vectorInserter(
  context: ScopeContext,
  tables: readonly SpaceTable[],
  vectors: VectorRow[],
): (space: string, rowid: number, vector: Float32Array, meta: readonly unknown[]) => void {
  const statements = new Map<string, { table: string; insert: Statement<unknown[]>; plain: Statement<unknown[]> }>(
    tables.map(({ space, table }) => [
      space.name,
      {
        table,
        insert: statement(
          context.db,
          `INSERT INTO ${table} (rowid, scope_key, session_rowid, time_ms, speaker, embedding) VALUES (?, ?, ?, ?, ?, ?)`,
        ),
        plain: statement(context.db, `INSERT INTO ${plainTableOf(table)} (rowid, embedding) VALUES (?, ?)`),
      },
    ]),
  );
  return (space, rowid, vector, meta) => {
    const statement = statements.get(space);
    if (!statement) throw new StoreError("commitSession", `vector for undeclared space ${space}`);
    statement.insert.run(BigInt(rowid), ...meta, vector);
    statement.plain.run(rowid, vector);
    vectors.push({ table: statement.table, rowid, vector });
  };
}

/** The index changes of this session land with it, or not at all; returns the entries they touch. */
function applyIndexPlan(context: ScopeContext, write: SessionWrite, rowids: readonly number[]): string[] {
  const { plan, spaces } = write.index;
  applyPlan(context.db, context.key, plan, spaces, (pointer) => {
    const position = pendingPosition(pointer);
    const rowid = position !== undefined ? rowids[position] : rawNodeRowid(context, pointer);
    if (rowid === undefined) throw new StoreError("commitSession", `index pointer ${pointer} names no raw node`);
    return rowid;
  });
  for (const audit of plan.audits) writeAudit(context, audit.action, audit.subject, audit.details);
  return [...new Set(plan.ops.map((op) => (op.op === "put" ? op.entry.id : op.entryId)))];
}
