import { CairnError, NotFoundError, StoreError } from "../../core/errors.ts";
import { keyedHashScheme } from "../audit-redaction.ts";
import { IndexVersionConflict } from "../index-records.ts";
import type { ForgetResult, ForgetTarget } from "../records.ts";
import type { ForgetRequest } from "../store.ts";
import { clearAudit, redactAudit, writeAudit } from "./audit-events.ts";
import { blobKey } from "./blob-files.ts";
import { forgottenNeedles, forgottenValues, markErasurePending, settleErasure } from "./forget-erasure.ts";
import { applyForgetOps, indexVersion } from "./index-rows.ts";
import { ftsDocuments, lexicalFields, lexicalTables, unindexDocuments } from "./lexical-index.ts";
import { retireProgramsOn } from "./question-bank.ts";
import { type ImageSlotRow, numbers, type RowidIdRow, strings } from "./record-rows.ts";
import { reindexSurvivors } from "./reindex-survivors.ts";
import type { ResidueNeedles } from "./residue-scan.ts";
import type { ScopeContext } from "./scope-context.ts";
import { type TenantStorage, tenantExists, tenantKeyRange } from "./tenants.ts";
import { imageSlots, plainTableOf, type SpaceRow, type VectorRow, vectorTableOf } from "./vector-rows.ts";
import { forgetVideoItems } from "./video-items.ts";

/** The rows a forget removes, resolved from its target inside the scope. */
interface ForgetRows {
  readonly nodeRowids: number[];
  readonly sessionRowids: number[];
  /** What the audit event names (as a keyed hash): the session id, the raw-node id, or "scope". */
  readonly subject: string;
}

/** vec0 rowids deleted per table, for the loaded ANN indexes once the transaction has committed. */
type RemovedVectors = { table: string; rowids: number[] }[];

/**
 * Deletes a session, a raw node or the whole scope: rows, FTS and vector rows, blobs no other raw
 * node of the tenant references (and their files), audit mentions of the forgotten keys and ids, and applies the
 * planned repair of the index entries built on them, all in one transaction. Then the WAL is
 * checkpointed and truncated, so once this returns the forgotten content is in none of the
 * store's files: deletes overwrite with zeros (`secure_delete`, FTS5 `secure-delete`, vec0 zeroes
 * a deleted vector's slot) and the WAL no longer holds the pages as they were.
 */
export function forget(context: ScopeContext, request: ForgetRequest): ForgetResult {
  const { target } = request;
  const { store } = context;
  const files = store.files;
  // Journal the blobs this forget may orphan: if the process dies after the commit, the next
  // open still deletes their files, so forgotten pixels never outlive their rows.
  const tenant = tenantExists(context.db, context.tenantStorage) ? context.tenantStorage : undefined;
  const journal = files.begin(tenant ? blobsOf(context, target).map((hash) => blobKey(tenant.token, hash)) : []);
  const removedVectors: RemovedVectors = [];
  const reindexedVectors: VectorRow[] = [];
  let forgotten: { result: ForgetResult; needles: ResidueNeedles | null };
  try {
    forgotten = context.db
      .transaction(() => forgetRows(context, tenant, request, removedVectors, reindexedVectors))
      .immediate();
    store.vectorIndexes.afterForget(context.key, removedVectors);
    // The survivors' re-derived text vectors replace their old ones in the loaded ANN indexes.
    store.vectorIndexes.afterCommit(context.key, reindexedVectors);
  } catch (error) {
    if (CairnError.is(error)) throw error;
    throw new StoreError("forget", error);
  } finally {
    files.settle(journal, (key) => store.hasBlob(key));
  }
  // The WAL still holds earlier versions of the pages this forget rewrote, and pages SQLite rebuilt
  // may still hold old copies of the forgotten rows: settling checkpoints the WAL, scans the file for
  // the forgotten values and vacuums if it finds one (decision 038).
  return { ...forgotten.result, erasure: settleErasure(context.db, store.databasePath, forgotten.needles) };
}

/** Blobs the target's raw nodes reference; none for a target that does not exist. */
function blobsOf(context: ScopeContext, target: ForgetTarget): string[] {
  try {
    return referencedBlobs(context, forgetTargets(context, target).nodeRowids);
  } catch (error) {
    if (error instanceof NotFoundError) return [];
    throw error;
  }
}

function forgetRows(
  context: ScopeContext,
  tenant: TenantStorage | undefined,
  request: ForgetRequest,
  removedVectors: RemovedVectors,
  reindexedVectors: VectorRow[],
): { result: ForgetResult; needles: ResidueNeedles | null } {
  const { target, plan } = request;
  const { nodeRowids, sessionRowids, subject } = forgetTargets(context, target);
  const nodeRowidById = rowidsById(context, nodeRowids);
  // The plan is stale if the index moved on or the target now covers other raw nodes: plan again.
  const version = indexVersion(context.db, context.key);
  if (version !== plan.baseVersion || !sameIds(plan.rawNodeIds, nodeRowidById)) {
    throw new IndexVersionConflict(plan.baseVersion, version);
  }
  const spaces = context.store.spaces();
  // Inside the write lock and before any row goes: persisted ANN indexes of this scope are deleted.
  context.store.vectorIndexes.beforeForget(context.key, spaces.map(vectorTableOf));
  const blobHashes = referencedBlobs(context, nodeRowids);
  const forgottenNames = namesOf(context, target, nodeRowids, sessionRowids);
  // An erasure an earlier forget left pending (a reader held the WAL) is for values no longer known:
  // this forget's scan could not clear it, so it vacuums.
  const earlierPending = markErasurePending(context.db, context.store.now());
  const forgotten = earlierPending ? null : forgottenValues(context, nodeRowids, sessionRowids, spaces);
  deleteDerivedRows(context, tenant, nodeRowids, spaces, removedVectors);
  // Survivors whose index text quoted the forgotten raw nodes: their text rows, made again without them.
  const reindexed = reindexSurvivors(context, tenant, request.reindex ?? [], new Set(plan.rawNodeIds), spaces, version);
  removedVectors.push(...reindexed.removed);
  reindexedVectors.push(...reindexed.inserted);
  // Programs whose evidence goes are retired with it: the bank never points at forgotten raw nodes.
  const programs = retireProgramsOn(context, nodeRowids);
  const videoItems = forgetVideoItems(context, [...nodeRowidById.keys()], "all" in target);
  applyForgetOps(context.db, context.key, plan, (id) => nodeRowidById.get(id));
  deleteRawNodesAndSessions(context, nodeRowids, sessionRowids);
  const removedBlobs = tenant ? releaseBlobs(context, tenant, blobHashes) : [];
  const needles = forgottenNeedles(forgotten, tenant ? blobsGone(context, tenant, removedBlobs) : []);
  const { repairs } = plan;
  // A forgotten scope keeps one event with counts; otherwise earlier events keep their shape, with
  // the forgotten keys and ids replaced by keyed hashes.
  const { store } = context;
  const auditEventsRedacted =
    "all" in target ? clearAudit(context) : redactAudit(context, forgottenNames, (value) => store.keyedHash(value));
  const auditId = writeAudit(context, "forget", "all" in target ? subject : store.keyedHash(subject), {
    target: "all" in target ? "all" : "session" in target ? "session" : "rawNode",
    ...("all" in target ? {} : { subjectHashed: keyedHashScheme }),
    ...("session" in target ? { request: store.keyedHash(target.session) } : {}),
    auditEventsRedacted,
    sessions: sessionRowids.length,
    rawNodes: nodeRowids.length,
    entries: repairs.removed.length,
    entriesRederived: repairs.rederived.length,
    entriesPromoted: repairs.promoted.length,
    entriesRelinked: repairs.relinked.length,
    orphansHosted: repairs.orphansHosted.length,
    entriesOverflowed: repairs.overflowed.length,
    blobsDeleted: removedBlobs.length,
    rawNodesReindexed: request.reindex?.length ?? 0,
    programs,
    videoItems,
  });
  // The repair's own maintenance events (an overflow that keeps the bounds) follow the forget's.
  for (const audit of plan.audits) writeAudit(context, audit.action, audit.subject, audit.details);
  return {
    result: {
      sessions: sessionRowids.length,
      rawNodes: nodeRowids.length,
      entries: repairs.removed.length,
      blobsDeleted: removedBlobs.length,
      auditId,
    },
    // What the erasure after the commit looks for (decision 038).
    needles,
  };
}

/** The identifiers a forget removes: session ids and keys, and raw-node ids. */
function namesOf(
  context: ScopeContext,
  target: ForgetTarget,
  nodeRowids: readonly number[],
  sessionRowids: readonly number[],
): Set<string> {
  if ("all" in target) return new Set();
  const { db } = context;
  const sessions = db
    .prepare("SELECT id, session_key FROM sessions WHERE rowid IN (SELECT value FROM json_each(?))")
    .all(JSON.stringify(sessionRowids)) as { id: string; session_key: string }[];
  const nodes = strings(
    db
      .prepare("SELECT id FROM raw_nodes WHERE rowid IN (SELECT value FROM json_each(?))")
      .pluck()
      .all(JSON.stringify(nodeRowids)),
  );
  return new Set([...sessions.flatMap((session) => [session.id, session.session_key]), ...nodes]);
}

function rowidsById(context: ScopeContext, nodeRowids: readonly number[]): Map<string, number> {
  const rows = context.db
    .prepare("SELECT rowid, id FROM raw_nodes WHERE rowid IN (SELECT value FROM json_each(?))")
    .all(JSON.stringify(nodeRowids)) as RowidIdRow[];
  return new Map(rows.map((row) => [row.id, row.rowid]));
}

function sameIds(planned: readonly string[], actual: ReadonlyMap<string, number>): boolean {
  return planned.length === actual.size && planned.every((id) => actual.has(id));
}

function forgetTargets(context: ScopeContext, target: ForgetTarget): ForgetRows {
  const { db, key } = context;
  const rowidsOf = (sql: string, ...params: unknown[]) =>
    numbers(
      db
        .prepare(sql)
        .pluck()
        .all(...params),
    );
  if ("all" in target) {
    return {
      nodeRowids: rowidsOf("SELECT rowid FROM raw_nodes WHERE scope_key = ?", key),
      sessionRowids: rowidsOf("SELECT rowid FROM sessions WHERE scope_key = ?", key),
      subject: "scope",
    };
  }
  if ("session" in target) {
    const row = db
      .prepare(
        "SELECT rowid, id FROM sessions WHERE scope_key = ? AND (id = ? OR session_key = ?) ORDER BY id = ? DESC LIMIT 1",
      )
      .get(key, target.session, target.session, target.session) as RowidIdRow | undefined;
    if (!row) throw new NotFoundError("session", target.session);
    return {
      nodeRowids: rowidsOf("SELECT rowid FROM raw_nodes WHERE scope_key = ? AND session_rowid = ?", key, row.rowid),
      sessionRowids: [row.rowid],
      subject: row.id,
    };
  }
  const [rowid] = rowidsOf("SELECT rowid FROM raw_nodes WHERE scope_key = ? AND id = ?", key, target.rawNode);
  if (rowid === undefined) throw new NotFoundError("raw node", target.rawNode);
  return { nodeRowids: [rowid], sessionRowids: [], subject: target.rawNode };
}

function referencedBlobs(context: ScopeContext, nodeRowids: readonly number[]): string[] {
  return strings(
    context.db
      .prepare(
        "SELECT DISTINCT blob_hash FROM raw_node_images WHERE blob_hash IS NOT NULL AND raw_node_rowid IN (SELECT value FROM json_each(?))",
      )
      .pluck()
      .all(JSON.stringify(nodeRowids)),
  );
}

/** Vector rows in every space, FTS rows and image rows of the raw nodes. */
function deleteDerivedRows(
  context: ScopeContext,
  tenant: TenantStorage | undefined,
  nodeRowids: readonly number[],
  spaces: readonly SpaceRow[],
  removedVectors: RemovedVectors,
): void {
  const { db } = context;
  const nodes = JSON.stringify(nodeRowids);
  const imageRowids = (
    db
      .prepare(
        "SELECT raw_node_rowid, ordinal FROM raw_node_images WHERE raw_node_rowid IN (SELECT value FROM json_each(?))",
      )
      .all(nodes) as ImageSlotRow[]
  ).map((row) => row.raw_node_rowid * imageSlots + row.ordinal);
  for (const space of spaces) {
    const rowids = space.kind === "text" ? [...nodeRowids] : imageRowids;
    db.prepare(`DELETE FROM ${space.table_name} WHERE rowid IN (SELECT value FROM json_each(?))`).run(
      JSON.stringify(rowids),
    );
    db.prepare(`DELETE FROM ${plainTableOf(space.table_name)} WHERE rowid IN (SELECT value FROM json_each(?))`).run(
      JSON.stringify(rowids),
    );
    removedVectors.push({ table: space.table_name, rowids });
  }
  for (const field of tenant ? lexicalFields : []) {
    const tables = lexicalTables(tenant as TenantStorage, field);
    // The lexical index reads the rows' bodies to know their terms: before FTS5 deletes them.
    unindexDocuments(db, tables, ftsDocuments(db, tables, context.key, nodeRowids));
    db.prepare(`DELETE FROM ${tables.fts} WHERE rowid IN (SELECT value FROM json_each(?))`).run(nodes);
  }
  db.prepare("DELETE FROM raw_node_images WHERE raw_node_rowid IN (SELECT value FROM json_each(?))").run(nodes);
}

/** Raw nodes, then the target sessions; a session that keeps some raw nodes reports what it still holds. */
function deleteRawNodesAndSessions(
  context: ScopeContext,
  nodeRowids: readonly number[],
  sessionRowids: readonly number[],
): void {
  const { db } = context;
  const nodes = JSON.stringify(nodeRowids);
  const touchedSessions = JSON.stringify(
    numbers(
      db
        .prepare("SELECT DISTINCT session_rowid FROM raw_nodes WHERE rowid IN (SELECT value FROM json_each(?))")
        .pluck()
        .all(nodes),
    ),
  );
  // A part's key is a hash of its turns: it goes with any of them.
  db.prepare(
    `DELETE FROM session_parts WHERE EXISTS (
       SELECT 1 FROM raw_nodes r WHERE r.rowid IN (SELECT value FROM json_each(?))
         AND r.session_rowid = session_parts.session_rowid
         AND r.turn >= session_parts.first_turn AND r.turn < session_parts.first_turn + session_parts.turn_count)`,
  ).run(nodes);
  db.prepare("DELETE FROM raw_nodes WHERE rowid IN (SELECT value FROM json_each(?))").run(nodes);
  db.prepare(
    `UPDATE sessions SET
       turn_count = (SELECT count(*) FROM raw_nodes r WHERE r.session_rowid = sessions.rowid),
       image_count = (SELECT count(*) FROM raw_node_images i JOIN raw_nodes r ON r.rowid = i.raw_node_rowid
                      WHERE r.session_rowid = sessions.rowid)
     WHERE rowid IN (SELECT value FROM json_each(?))`,
  ).run(touchedSessions);
  db.prepare("DELETE FROM session_parts WHERE session_rowid IN (SELECT value FROM json_each(?))").run(
    JSON.stringify(sessionRowids),
  );
  db.prepare("DELETE FROM sessions WHERE rowid IN (SELECT value FROM json_each(?))").run(JSON.stringify(sessionRowids));
}

/** Of the images this scope released, those the tenant holds no more (their rows are gone). */
function blobsGone(context: ScopeContext, tenant: TenantStorage, released: readonly string[]): string[] {
  const held = context.db.prepare("SELECT 1 FROM blobs WHERE tenant = ? AND hash = ?");
  return released.filter((hash) => held.get(tenant.token, hash) === undefined);
}

/**
 * The images this scope no longer uses after the forget: what the forget reports, counted from the
 * scope's own rows alone. Those no raw node of the tenant uses lose their rows and cached vectors
 * (their files go when the journal settles); another tenant's copy is never looked at.
 */
function releaseBlobs(context: ScopeContext, tenant: TenantStorage, hashes: readonly string[]): string[] {
  const { db } = context;
  const [low, high] = tenantKeyRange(context.tenant);
  const usedWhere = (range: string) =>
    db.prepare(
      `SELECT 1 FROM raw_node_images i JOIN raw_nodes r ON r.rowid = i.raw_node_rowid
       WHERE i.blob_hash = ? AND ${range} LIMIT 1`,
    );
  const usedInScope = usedWhere("r.scope_key = ?");
  const usedInTenant = usedWhere("r.scope_key >= ? AND r.scope_key < ?");
  const released = hashes.filter((hash) => !usedInScope.get(hash, context.key));
  for (const hash of released) {
    if (usedInTenant.get(hash, low, high)) continue;
    db.prepare("DELETE FROM blob_vectors WHERE tenant = ? AND blob_hash = ?").run(tenant.token, hash);
    db.prepare("DELETE FROM blobs WHERE tenant = ? AND hash = ?").run(tenant.token, hash);
  }
  return released;
}
