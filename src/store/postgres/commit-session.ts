import { ConflictError, StoreError } from "../../core/errors.ts";
import { vectorBytes } from "../../core/vectors.ts";
import { IndexVersionConflict, pendingPosition } from "../index-records.ts";
import { lexicalDocument } from "../lexical-text.ts";
import { type SessionRow, toSession } from "../record-rows.ts";
import type { CommitResult, RawNodeWrite, SessionRecord, SessionWrite } from "../records.ts";
import type { SessionIdentity } from "../store.ts";
import { auditParameters } from "./audit-events.ts";
import { applyPlan, bumpVersionStatement, lockIndex } from "./index-rows.ts";
import { insertLexicalDocuments, lexicalDocumentsParts, termColumns } from "./lexical-documents.ts";
import { addLexicalStatistics, addLexicalTermsStatement, addLexicalTotalsStatement } from "./lexical-statistics.ts";
import { rawNodeRowids } from "./read-raw-nodes.ts";
import { sessionRowByKey } from "./read-sessions.ts";
import type { ScopeContext } from "./scope-context.ts";
import { prepared, type Sql } from "./tenant-transaction.ts";
import { type SpaceRow, textOrdinal, vectorLiteral } from "./vector-spaces.ts";

/**
 * Writes a session, its raw nodes, blobs (bytes and thumbnails, once per tenant), image
 * references, lexical documents, vectors, its index plan and audit events; the caller runs it in
 * one transaction, so a failure anywhere leaves nothing. It starts by taking the scope's write
 * lock: the key check, the plan's base version and the insert all see the same state.
 */
export async function commitSession(
  context: ScopeContext,
  sql: Sql,
  write: SessionWrite,
  lockedVersion?: number,
): Promise<CommitResult> {
  return writeSession(context, sql, write, null, lockedVersion);
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
  lockedVersion?: number,
): Promise<CommitResult> {
  const version = lockedVersion ?? (await lockIndex(context, sql));
  const { baseVersion } = write.index.plan;
  if (!identity && !write.append && (baseVersion === null || baseVersion === version)) {
    // The common case, a new session: written in one statement, or found stored (then as below).
    const written = await writeNewSession(context, sql, version, write);
    if (written) return written;
  }
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
  if (!planned) {
    // Last: the tenant's shared statistics rows stay locked only until the commit that follows.
    await addLexicalStatistics(
      context,
      sql,
      rowids.map((node) => node.rowid),
    );
    return { rawNodeIds: rowids.map((node) => node.id), entryIds: [] };
  }
  const entryIds = await applyCommitPlan(context, sql, write, rowids, planned);
  return { rawNodeIds: rowids.map((node) => node.id), entryIds };
}

/**
 * A commit's index plan against `planned.version` (its puts, then its links), then one last
 * statement: the plan's and the commit's audit events, the version bump and the tenant's lexical
 * statistics. Returns the ids of the entries the plan touched.
 */
async function applyCommitPlan(
  context: ScopeContext,
  sql: Sql,
  write: SessionWrite,
  rowids: readonly { id: string; rowid: number }[],
  planned: PlannedWrite,
): Promise<string[]> {
  const { plan } = write.index;
  const resolve = async (pointers: readonly string[]) => {
    const stored = await rawNodeRowids(
      context,
      sql,
      pointers.filter((pointer) => pendingPosition(pointer) === undefined),
    );
    return pointers.map((pointer) => {
      const position = pendingPosition(pointer);
      const rowid = position !== undefined ? rowids[position]?.rowid : stored.get(pointer);
      if (rowid === undefined) throw new StoreError("commitSession", `index pointer ${pointer} names no raw node`);
      return rowid;
    });
  };
  await applyPlan(context, sql, planned.version, plan, write.index.spaces, resolve, { bumpVersion: false });
  const entryIds = [...new Set(plan.ops.map((op) => (op.op === "put" ? op.entry.id : op.entryId)))];
  const events = [
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
  ];
  await sql.query(finishCommitStatement, [...auditParameters(context, events), rowids.map((node) => node.rowid)]);
  return entryIds;
}

/**
 * A commit's last statement: its audit events in the order given, the index version moved on by
 * one, then the tenant's lexical statistics — terms before totals, the order every writer takes
 * those shared rows in (`lexical-statistics.ts`), as late as possible so they stay locked only
 * until the COMMIT that follows. The main query reads each data-modifying part in that order,
 * which makes each run to completion when it is read.
 */
const finishCommitStatement = prepared(`WITH audited AS (
     INSERT INTO audit_events (id, tenant, scope_key, time_ms, action, subject, details)
     SELECT a.id, $1, $2, $3, a.action, a.subject, a.details
     FROM unnest($4::text[], $5::text[], $6::text[], $7::text[]) WITH ORDINALITY AS a (id, action, subject, details, position)
     ORDER BY a.position
     RETURNING 1
   ), bumped AS (
     ${bumpVersionStatement("$2", "$1")}
     RETURNING 1
   ), terms AS (
     ${addLexicalTermsStatement("$1", "$8")}
     RETURNING 1
   ), totals AS (
     ${addLexicalTotalsStatement("$1", "$8")}
     RETURNING 1
   )
   SELECT (SELECT count(*) FROM audited) AS audited, (SELECT count(*) FROM bumped) AS bumped,
     (SELECT count(*) FROM terms) AS terms, (SELECT count(*) FROM totals) AS totals`);

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
  const { images, cached, documents, vectors } = derivedColumns(
    write,
    nodes.map((node) => node.rowid),
    spaces,
  );
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
    await insertLexicalDocuments(sql, context, { rowids, fields, bodies: bodies as string[] });
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

/**
 * A new session (no key stored in the scope yet), all its rows in one statement: the session (and
 * the scope's registry row), blobs in hash order, raw nodes, image references, cached image
 * vectors, vectors per space and lexical documents with their postings — the rows the statements
 * one per table wrote. Then the plan and the last statement (`applyCommitPlan`). Returns null,
 * having written nothing, when the key is already stored: the caller goes the way of a stored key.
 */
async function writeNewSession(
  context: ScopeContext,
  sql: Sql,
  version: number,
  write: SessionWrite,
): Promise<CommitResult | null> {
  const spaces = new Map<string, SpaceRow>();
  for (const space of write.spaces) spaces.set(space.name, await context.store.spaces.ensure(sql, space));
  const now = context.store.now();
  const sessionId = context.store.newId("ses");
  const imageCount = write.rawNodes.reduce((sum, node) => sum + node.images.length, 0);
  const ids = write.rawNodes.map(() => context.store.newId("rn"));
  const blobs = [...write.blobs].sort((left, right) => (left.hash < right.hash ? -1 : 1));
  const blob = <T>(pick: (blob: SessionWrite["blobs"][number]) => T) => blobs.map(pick);
  const node = <T>(pick: (node: SessionWrite["rawNodes"][number]) => T) => write.rawNodes.map(pick);
  const derived = derivedColumns(write, ids, spaces);
  const vectorTables = [...derived.vectors.keys()].map((name) => {
    const space = spaces.get(name);
    if (!space) throw new StoreError("commitSession", `vector for undeclared space ${name}`);
    return space;
  });
  const values: unknown[] = [
    context.tenant,
    context.key,
    sessionId,
    write.key,
    write.timeMs,
    write.source,
    write.contentHash,
    write.rawNodes.length,
    imageCount,
    now,
    // $11–$17: blobs
    blob((item) => item.hash),
    blob((item) => item.mediaType),
    blob((item) => item.bytes),
    blob((item) => item.width),
    blob((item) => item.height),
    blob((item) => item.data),
    blob((item) => item.thumbnail),
    // $18–$26: raw nodes
    ids,
    node((item) => item.turn),
    node((item) => item.speaker),
    node((item) => item.role),
    node((item) => item.text),
    node((item) => item.timeMs),
    node((item) => item.source),
    node((item) => item.uri),
    node((item) => JSON.stringify(item.metadata)),
    // $27–$32: image references; $33–$35: cached image vectors; $36–$40: lexical documents
    ...derived.images.values,
    ...derived.cached.values,
    ...documentColumns(derived.documents),
  ];
  const vectorParts = vectorTables.map((space) => {
    const first = values.length + 1;
    values.push(...(derived.vectors.get(space.name)?.values ?? []));
    return `, ${space.table_name}_rows AS (
       INSERT INTO ${space.table_name} (raw_node_rowid, ordinal, tenant, scope_key, session_rowid, time_ms, speaker, embedding)
       SELECT n.rowid, v.ordinal, $1, $2, s.rowid, v.time_ms, v.speaker, v.embedding::vector(${space.dimensions})
       FROM session s, unnest($${first}::text[], $${first + 1}::int[], $${first + 2}::bigint[], $${first + 3}::text[], $${first + 4}::text[])
         AS v (node_id, ordinal, time_ms, speaker, embedding)
       JOIN nodes n ON n.id = v.node_id
     )`;
  });
  const rows = await sql.query<SessionRow & { node_id: string | null; node_rowid: number | null }>(
    prepared(`${newSessionStatement}${vectorParts.join("")}
     SELECT s.*, n.id AS node_id, n.rowid AS node_rowid FROM session s LEFT JOIN nodes n ON true`),
    values,
  );
  const [session] = rows;
  if (!session) return null;
  const rowidOf = new Map(rows.map((row) => [row.node_id, row.node_rowid]));
  const rowids = ids.map((id) => {
    const rowid = rowidOf.get(id);
    if (rowid === undefined || rowid === null) throw new StoreError("commitSession", `raw node ${id} was not inserted`);
    return { id, rowid };
  });
  const entryIds = await applyCommitPlan(context, sql, write, rowids, {
    version,
    action: "session.add",
    sessionId,
    details: { images: imageCount },
  });
  const { node_id: _id, node_rowid: _rowid, ...sessionRow } = session;
  return { session: toSession(sessionRow), rawNodeIds: ids, entryIds, duplicate: false };
}

/**
 * The parts of a new session's statement every session shares (`writeNewSession`; the vector
 * tables' parts follow). Each part that writes rows of the session's raw nodes reads `nodes`, so
 * when the session's key is stored already (`session` returns nothing) none of them writes a row;
 * blobs and cached image vectors are kept out the same way. Constraints are checked at the end of
 * the statement, when every row is in.
 */
const newSessionStatement = `WITH registered AS (
       INSERT INTO scopes (scope_key, tenant) VALUES ($2, $1) ON CONFLICT (scope_key) DO NOTHING
     ), session AS (
       INSERT INTO sessions (id, tenant, scope_key, session_key, time_ms, source, content_hash, turn_count, image_count, created_ms)
       VALUES ($3, $1, $2, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (scope_key, session_key) DO NOTHING RETURNING *
     ), stored_blobs AS (
       INSERT INTO blobs (tenant, hash, media_type, bytes, width, height, data, thumbnail)
       SELECT $1, b.hash, b.media_type, b.bytes, b.width, b.height, b.data, b.thumbnail
       FROM unnest($11::text[], $12::text[], $13::bigint[], $14::int[], $15::int[], $16::bytea[], $17::bytea[])
         WITH ORDINALITY AS b (hash, media_type, bytes, width, height, data, thumbnail, position)
       WHERE EXISTS (SELECT 1 FROM session)
       ORDER BY b.position
       ON CONFLICT (tenant, hash) DO NOTHING
     ), nodes AS (
       INSERT INTO raw_nodes (id, tenant, scope_key, session_rowid, turn, speaker, role, text, time_ms, source, uri, metadata)
       SELECT n.id, $1, $2, s.rowid, n.turn, n.speaker, n.role, n.text, n.time_ms, n.source, n.uri, n.metadata
       FROM session s, unnest($18::text[], $19::int[], $20::text[], $21::text[], $22::text[], $23::bigint[], $24::text[], $25::text[], $26::text[])
         WITH ORDINALITY AS n (id, turn, speaker, role, text, time_ms, source, uri, metadata, position)
       ORDER BY n.position
       RETURNING id, rowid
     ), images AS (
       INSERT INTO raw_node_images (raw_node_rowid, ordinal, tenant, scope_key, blob_hash, caption, derived_text, origin)
       SELECT n.rowid, i.ordinal, $1, $2, i.hash, i.caption, i.derived, i.origin
       FROM unnest($27::text[], $28::int[], $29::text[], $30::text[], $31::text[], $32::text[])
         AS i (node_id, ordinal, hash, caption, derived, origin)
       JOIN nodes n ON n.id = i.node_id
     ), cached AS (
       INSERT INTO blob_vectors (tenant, blob_hash, space, vector)
       SELECT DISTINCT ON (c.hash, c.space) $1, c.hash, c.space, c.vector
       FROM unnest($33::text[], $34::text[], $35::bytea[]) AS c (hash, space, vector)
       WHERE EXISTS (SELECT 1 FROM session)
       ON CONFLICT (tenant, blob_hash, space) DO NOTHING
     ), ${lexicalDocumentsParts(
       `(SELECT n.rowid, d.field, d.terms, d.tfs, d.length
         FROM unnest($36::text[], $37::text[], $38::text[], $39::text[], $40::int[]) AS d (node_id, field, terms, tfs, length)
         JOIN nodes n ON n.id = d.node_id) AS x`,
       "$1",
       "$2",
     )}`;

/** Lexical documents (key, field, body) as a new session's statement reads them: key, field, then `termColumns`. */
function documentColumns(documents: Columns): unknown[][] {
  const [keys = [], fields = [], bodies = []] = documents.values;
  const { terms, tfs, lengths } = termColumns(bodies as string[]);
  return [keys, fields, terms, tfs, lengths];
}

/**
 * A session's image references, cached image vectors, lexical documents and vectors as columns, each
 * row keyed by its raw node's key in `ids` (its id for a new session's one statement, its rowid otherwise).
 */
function derivedColumns(
  write: SessionWrite,
  ids: readonly (string | number)[],
  spaces: ReadonlyMap<string, SpaceRow>,
): { images: Columns; cached: Columns; documents: Columns; vectors: Map<string, Columns> } {
  const images = new Columns(6);
  const documents = new Columns(3);
  const cached = new Columns(3);
  const vectors = new Map<string, Columns>();
  const addVector = (space: string, id: string | number, ordinal: number, node: RawNodeWrite, vector: Float32Array) => {
    if (!spaces.has(space)) throw new StoreError("commitSession", `vector for undeclared space ${space}`);
    const columns = vectors.get(space) ?? new Columns(5);
    columns.add(id, ordinal, node.timeMs, node.speaker, vectorLiteral(vector));
    vectors.set(space, columns);
  };
  write.rawNodes.forEach((node, position) => {
    const id = ids[position];
    if (id === undefined) throw new StoreError("commitSession", "raw node ids out of step with the write");
    documents.add(id, "text", lexicalDocument(node.indexText ?? node.text));
    const imageText = node.images
      .map((image) => [image.caption, image.derivedText].filter(Boolean).join(" "))
      .join(" ");
    if (imageText.trim()) documents.add(id, "imageText", lexicalDocument(imageText));
    for (const [space, vector] of Object.entries(node.textVectors)) addVector(space, id, textOrdinal, node, vector);
    node.images.forEach((image, ordinal) => {
      images.add(id, ordinal, image.hash, image.caption, image.derivedText, image.origin);
      for (const [space, vector] of Object.entries(node.imageVectors[ordinal] ?? {})) {
        addVector(space, id, ordinal, node, vector);
        if (image.hash) cached.add(image.hash, space, Buffer.from(vectorBytes(vector)));
      }
    });
  });
  return { images, cached, documents, vectors };
}
