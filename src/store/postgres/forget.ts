import { NotFoundError } from "../../core/errors.ts";
import { keyedHashScheme } from "../audit-redaction.ts";
import { IndexVersionConflict } from "../index-records.ts";
import type { ForgetResult, ForgetTarget } from "../records.ts";
import type { ForgetRequest } from "../store.ts";
import { clearAudit, keyedHasher, redactAudit, writeAudit, writeAudits } from "./audit-events.ts";
import { applyForgetOps, lockIndex, renewVectorGeneration } from "./index-rows.ts";
import { removeLexicalStatistics } from "./lexical-statistics.ts";
import { retireProgramsOn } from "./question-bank.ts";
import { lockReindexTerms, reindexSurvivors, survivorRowids } from "./reindex-survivors.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";
import { forgetVideoItems } from "./video-items.ts";

/** The rows a forget removes, resolved from its target inside the scope. */
interface ForgetRows {
  readonly nodes: ReadonlyMap<string, number>;
  readonly sessionRowids: readonly number[];
  /** What the audit event names (as a keyed hash): the session id, the raw-node id, or "scope". */
  readonly subject: string;
}

/**
 * Deletes a session, a raw node or the whole scope — rows, lexical documents and vectors (by
 * cascade from the raw nodes), image references, the tenant's blob bytes no raw node of the tenant
 * uses any more, audit mentions of the forgotten keys and ids — and applies the planned repair of
 * the index built on them; the caller runs it in one transaction, under the scope's write lock.
 *
 * `blobsDeleted` counts the distinct images the forgotten raw nodes referenced that no raw node of
 * this scope references any more: what this scope lost sight of, whatever other scopes hold.
 */
export async function forget(context: ScopeContext, sql: Sql, request: ForgetRequest): Promise<ForgetResult> {
  const { target, plan } = request;
  const version = await lockIndex(context, sql);
  const { nodes, sessionRowids, subject } = await forgetTargets(context, sql, target);
  // The plan is stale if the index moved on or the target now covers other raw nodes: plan again.
  if (
    version !== plan.baseVersion ||
    plan.rawNodeIds.length !== nodes.size ||
    !plan.rawNodeIds.every((id) => nodes.has(id))
  ) {
    throw new IndexVersionConflict(plan.baseVersion, version);
  }
  const nodeRowids = [...nodes.values()];
  await renewVectorGeneration(context, sql);
  const reindex = request.reindex ?? [];
  const survivors = await survivorRowids(context, sql, reindex, nodes, version);
  const blobHashes = (
    await sql.query<{ hash: string }>(
      "SELECT DISTINCT blob_hash AS hash FROM raw_node_images WHERE raw_node_rowid = ANY($1::bigint[]) AND blob_hash IS NOT NULL",
      [nodeRowids],
    )
  ).map((row) => row.hash);
  // The tenant's blob rows before its shared statistics rows: the order a commit takes them in.
  await sql.query("SELECT 1 FROM blobs WHERE tenant = $1 AND hash = ANY($2::text[]) ORDER BY hash FOR UPDATE", [
    context.tenant,
    blobHashes,
  ]);
  const forgottenNames = await namesOf(context, sql, target, nodeRowids, sessionRowids);
  await applyForgetOps(context, sql, plan, nodes);
  const videoItems = await forgetVideoItems(context, sql, [...nodes.keys()], "all" in target);
  // The survivors' documents leave the statistics with the forgotten ones and come back re-derived.
  const documents = [...nodeRowids, ...survivors.values()];
  await lockReindexTerms(context, sql, documents, reindex);
  await removeLexicalStatistics(context, sql, documents);
  await reindexSurvivors(context, sql, reindex, survivors);
  // Programs whose evidence goes are retired with it: the bank never points at forgotten raw nodes.
  const programs = await retireProgramsOn(context, sql, nodeRowids);
  await deleteRawNodesAndSessions(context, sql, nodeRowids, sessionRowids);
  const unseen = await sql.query<{ hash: string }>(
    `SELECT h.hash FROM unnest($1::text[]) AS h (hash)
     WHERE NOT EXISTS (SELECT 1 FROM raw_node_images i WHERE i.scope_key = $2 AND i.blob_hash = h.hash)`,
    [blobHashes, context.key],
  );
  // The bytes go once no raw node of the tenant uses them (their cached vectors cascade).
  await sql.query(
    `DELETE FROM blobs b WHERE b.tenant = $1 AND b.hash = ANY($2::text[])
       AND NOT EXISTS (SELECT 1 FROM raw_node_images i WHERE i.tenant = b.tenant AND i.blob_hash = b.hash)`,
    [context.tenant, blobHashes],
  );
  const hash = await keyedHasher(context, sql);
  const all = "all" in target;
  // A forgotten scope keeps one event with counts; otherwise earlier events keep their shape, with
  // the forgotten keys and ids replaced by keyed hashes.
  const auditEventsRedacted = all
    ? await clearAudit(context, sql)
    : await redactAudit(context, sql, forgottenNames, hash);
  const { repairs } = plan;
  const auditId = await writeAudit(context, sql, "forget", all ? subject : hash(subject), {
    target: all ? "all" : "session" in target ? "session" : "rawNode",
    ...(all ? {} : { subjectHashed: keyedHashScheme }),
    ...("session" in target ? { request: hash(target.session) } : {}),
    auditEventsRedacted,
    sessions: sessionRowids.length,
    rawNodes: nodeRowids.length,
    entries: repairs.removed.length,
    entriesRederived: repairs.rederived.length,
    entriesPromoted: repairs.promoted.length,
    entriesRelinked: repairs.relinked.length,
    orphansHosted: repairs.orphansHosted.length,
    entriesOverflowed: repairs.overflowed.length,
    blobsDeleted: unseen.length,
    rawNodesReindexed: reindex.length,
    programs,
    videoItems,
  });
  // The repair's own maintenance events (an overflow that keeps the bounds) follow the forget's.
  await writeAudits(context, sql, plan.audits);
  return {
    sessions: sessionRowids.length,
    rawNodes: nodeRowids.length,
    entries: repairs.removed.length,
    blobsDeleted: unseen.length,
    auditId,
  };
}

async function forgetTargets(context: ScopeContext, sql: Sql, target: ForgetTarget): Promise<ForgetRows> {
  const nodesOf = async (where: string, values: readonly unknown[]) =>
    new Map(
      (
        await sql.query<{ id: string; rowid: number }>(
          `SELECT id, rowid FROM raw_nodes WHERE scope_key = $1 ${where}`,
          [context.key, ...values],
        )
      ).map((row) => [row.id, row.rowid]),
    );
  if ("all" in target) {
    const sessions = await sql.query<{ rowid: number }>("SELECT rowid FROM sessions WHERE scope_key = $1", [
      context.key,
    ]);
    return { nodes: await nodesOf("", []), sessionRowids: sessions.map((row) => row.rowid), subject: "scope" };
  }
  if ("session" in target) {
    // An id wins over a key that happens to equal it.
    const [row] = await sql.query<{ rowid: number; id: string }>(
      `SELECT rowid, id FROM sessions WHERE scope_key = $1 AND (id = $2 OR session_key = $2)
       ORDER BY (id = $2) DESC LIMIT 1`,
      [context.key, target.session],
    );
    if (!row) throw new NotFoundError("session", target.session);
    return { nodes: await nodesOf("AND session_rowid = $2", [row.rowid]), sessionRowids: [row.rowid], subject: row.id };
  }
  const nodes = await nodesOf("AND id = $2", [target.rawNode]);
  if (nodes.size === 0) throw new NotFoundError("raw node", target.rawNode);
  return { nodes, sessionRowids: [], subject: target.rawNode };
}

/** The identifiers a forget removes: session ids and keys, and raw-node ids. */
async function namesOf(
  context: ScopeContext,
  sql: Sql,
  target: ForgetTarget,
  nodeRowids: readonly number[],
  sessionRowids: readonly number[],
): Promise<Set<string>> {
  if ("all" in target) return new Set();
  const sessions = await sql.query<{ id: string; session_key: string }>(
    "SELECT id, session_key FROM sessions WHERE scope_key = $1 AND rowid = ANY($2::bigint[])",
    [context.key, sessionRowids],
  );
  const nodes = await sql.query<{ id: string }>(
    "SELECT id FROM raw_nodes WHERE scope_key = $1 AND rowid = ANY($2::bigint[])",
    [context.key, nodeRowids],
  );
  return new Set([
    ...sessions.flatMap((session) => [session.id, session.session_key]),
    ...nodes.map((node) => node.id),
  ]);
}

/**
 * Raw nodes (their images, lexical documents and vectors cascade), then the target sessions; a
 * session that keeps some raw nodes reports what it still holds.
 */
async function deleteRawNodesAndSessions(
  context: ScopeContext,
  sql: Sql,
  nodeRowids: readonly number[],
  sessionRowids: readonly number[],
): Promise<void> {
  // A part's key is a hash of its turns: it goes with any of them, and with its session.
  await sql.query(
    `DELETE FROM session_parts p USING raw_nodes r
     WHERE r.scope_key = $1 AND r.rowid = ANY($2::bigint[]) AND r.session_rowid = p.session_rowid
       AND r.turn >= p.first_turn AND r.turn < p.first_turn + p.turn_count`,
    [context.key, nodeRowids],
  );
  await sql.query("DELETE FROM session_parts WHERE session_rowid = ANY($1::bigint[])", [sessionRowids]);
  // The documents first, in one statement: their postings leave their blocks in one pass of the
  // delete trigger (the cascade from raw_nodes would fire it once per raw node).
  await sql.query("DELETE FROM lexical_docs WHERE raw_node_rowid = ANY($1::bigint[])", [nodeRowids]);
  const touched = await sql.query<{ session_rowid: number }>(
    "DELETE FROM raw_nodes WHERE scope_key = $1 AND rowid = ANY($2::bigint[]) RETURNING session_rowid",
    [context.key, nodeRowids],
  );
  await sql.query(
    `UPDATE sessions s SET
       turn_count = (SELECT count(*) FROM raw_nodes r WHERE r.session_rowid = s.rowid),
       image_count = (SELECT count(*) FROM raw_node_images i JOIN raw_nodes r ON r.rowid = i.raw_node_rowid
                      WHERE r.session_rowid = s.rowid)
     WHERE s.scope_key = $1 AND s.rowid = ANY($2::bigint[])`,
    [context.key, [...new Set(touched.map((row) => row.session_rowid))]],
  );
  await sql.query("DELETE FROM sessions WHERE scope_key = $1 AND rowid = ANY($2::bigint[])", [
    context.key,
    sessionRowids,
  ]);
}
