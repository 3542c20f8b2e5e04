import { InvariantError } from "../../core/errors.ts";
import {
  type EntryDigest,
  type EntryStatus,
  type ForgetPlan,
  type IndexEntry,
  type IndexState,
  IndexVersionConflict,
  type MaintenancePlan,
  type Relation,
} from "../index-records.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";
import { vectorFromSend, vectorLiteral } from "./vector-spaces.ts";

/**
 * Rows of the active index (C3M): entries, their pointers to raw nodes, and a per-scope version
 * for optimistic concurrency. Every statement binds the scope key; callers run them inside the
 * scoped store's transactions.
 */

interface EntryRow {
  rowid: number;
  id: string;
  status: EntryStatus;
  page: number | null;
  digest: string;
  routing_text: string;
  tokens: number;
  vector: Buffer;
  vector_weight: number;
  image_vector: Buffer | null;
  image_weight: number;
  sessions: string;
  time_start_ms: number;
  time_end_ms: number;
  predecessor: string | null;
  host: string | null;
  last_action: string;
  relation: Relation | null;
  created_ms: number;
  updated_ms: number;
  pointers: string[];
}

/** Entry columns with their pointers' raw-node ids in link order, from `index_entries e`. */
const entryColumns = `e.rowid, e.id, e.status, e.page, e.digest, e.routing_text, e.tokens, vector_send(e.vector) AS vector,
  e.vector_weight, vector_send(e.image_vector) AS image_vector, e.image_weight, e.sessions, e.time_start_ms, e.time_end_ms,
  e.predecessor, e.host, e.last_action, e.relation, e.created_ms, e.updated_ms,
  ARRAY(SELECT r.id FROM index_pointers p JOIN raw_nodes r ON r.rowid = p.raw_node_rowid
        WHERE p.entry_rowid = e.rowid ORDER BY p.ordinal) AS pointers`;

export async function indexVersion(context: ScopeContext, sql: Sql): Promise<number> {
  const [row] = await sql.query<{ version: number }>("SELECT version FROM index_state WHERE scope_key = $1", [
    context.key,
  ]);
  return row?.version ?? 0;
}

/**
 * Takes the scope's write lock (its `index_state` row, created at version 0 if missing) and returns
 * the version: every write of a scope starts here, so writers of one scope take turns and each sees
 * what the previous one committed, like SQLite's `BEGIN IMMEDIATE`, while other scopes write on.
 */
export async function lockIndex(context: ScopeContext, sql: Sql): Promise<number> {
  const [row] = await sql.query<{ version: number }>(lockIndexStatement.text, lockIndexStatement.values(context));
  return row?.version ?? 0;
}

/**
 * The lock as a statement of its own (values: the scope's key and tenant), for a transaction that
 * takes it on the round trip that opens it (`inTenant`'s `opening`). One statement: an upsert that
 * changes nothing still locks the row it meets (as FOR UPDATE would), and waits for a writer
 * holding it, then returns the version that writer left.
 */
export const lockIndexStatement = {
  text: `INSERT INTO index_state (scope_key, tenant, version) VALUES ($1, $2, 0)
     ON CONFLICT (scope_key) DO UPDATE SET version = index_state.version RETURNING version`,
  values: (context: ScopeContext): [string, string] => [context.key, context.tenant],
} as const;

/**
 * Inside a write that deletes or replaces vectors of the scope (forget, replaceVectors), under its
 * lock: a new generation for the scope's vectors, so every process's in-memory index of the scope
 * is dropped at its next search rather than caught up (decision 025; `ann-indexes.ts`).
 */
export async function renewVectorGeneration(context: ScopeContext, sql: Sql): Promise<void> {
  await sql.query("UPDATE index_state SET vector_generation = nextval('vector_seq') WHERE scope_key = $1", [
    context.key,
  ]);
}

/** The index of one scope: only active entries (what maintenance plans against) or all of them. */
export async function readIndex(
  context: ScopeContext,
  sql: Sql,
  options: { activeOnly: boolean },
): Promise<IndexState> {
  const rows = await sql.query<EntryRow>(
    `SELECT ${entryColumns} FROM index_entries e
     WHERE e.scope_key = $1 ${options.activeOnly ? "AND e.status = 'active'" : ""} ORDER BY e.rowid`,
    [context.key],
  );
  return { version: await indexVersion(context, sql), entries: new Map(rows.map((row) => [row.id, toEntry(row)])) };
}

/**
 * Entries hosted by `hosts` (not merged ones: their pointers are their host's) and entries named by
 * `ids` (any status), with their pointers.
 */
export async function readLinked(
  context: ScopeContext,
  sql: Sql,
  options: {
    readonly hosts: readonly string[];
    readonly ids: readonly string[];
  },
): Promise<IndexEntry[]> {
  if (options.hosts.length === 0 && options.ids.length === 0) return [];
  const rows = await sql.query<EntryRow>(
    `SELECT ${entryColumns} FROM index_entries e
     WHERE e.scope_key = $1 AND e.rowid IN (
       SELECT rowid FROM index_entries WHERE scope_key = $1 AND host = ANY($2::text[]) AND status <> 'merged'
       UNION SELECT rowid FROM index_entries WHERE scope_key = $1 AND id = ANY($3::text[])
     ) ORDER BY e.rowid`,
    [context.key, options.hosts, options.ids],
  );
  return rows.map(toEntry);
}

/**
 * Applies a maintenance plan. `resolve` maps pointers (stored raw-node ids, or `@n` for the n-th
 * raw node of the session being committed) to raw-node rowids of this scope. The caller holds the
 * scope's lock (`lockIndex`) and passes the version it read.
 */
export async function applyPlan(
  context: ScopeContext,
  sql: Sql,
  version: number,
  plan: MaintenancePlan,
  spaces: { readonly text: string; readonly image: string | null },
  resolve: (pointers: readonly string[]) => Promise<number[]>,
  options: { readonly bumpVersion: boolean } = { bumpVersion: true },
): Promise<void> {
  if (plan.baseVersion === null) await checkIndependent(context, sql, plan);
  else if (version !== plan.baseVersion) throw new IndexVersionConflict(plan.baseVersion, version);
  // Puts go in one statement and links in another, not a round trip or two per op (see runsOf).
  for (const run of runsOf(plan.ops)) {
    if (run.kind === "put") await putEntries(context, sql, run.ops, spaces);
    else await linkPointers(context, sql, run.ops, resolve);
  }
  // A commit bumps the version in its last statement, with its audit events (commit-session.ts).
  if (options.bumpVersion) await bumpVersion(context, sql);
}

type PlanOp = MaintenancePlan["ops"][number];
type PutOp = Extract<PlanOp, { op: "put" }>;
type LinkOp = Extract<PlanOp, { op: "link" }>;
type OpRun = { readonly kind: "put"; readonly ops: PutOp[] } | { readonly kind: "link"; readonly ops: LinkOp[] };

/**
 * The plan's ops as runs of one kind; a drop is refused (only forget removes index rows). A put
 * never touches pointers and a link never touches an entry's columns, so every put may go before
 * every link — one run of each — unless a link names an entry the plan only puts after it: the
 * link must then fail when the entry does not exist yet, so the plan's order is kept, run by run.
 */
function runsOf(ops: readonly PlanOp[]): OpRun[] {
  for (const op of ops) {
    if (op.op === "drop") {
      throw new InvariantError("provenance", "maintenance may not drop an entry: only forget removes index rows");
    }
  }
  const putIds = new Set(ops.flatMap((op) => (op.op === "put" ? [op.entry.id] : [])));
  const putSoFar = new Set<string>();
  let linksBeforePut = false;
  for (const op of ops) {
    if (op.op === "put") putSoFar.add(op.entry.id);
    else if (op.op === "link" && putIds.has(op.entryId) && !putSoFar.has(op.entryId)) linksBeforePut = true;
  }
  const ordered = linksBeforePut
    ? ops
    : [...ops.filter((op) => op.op === "put"), ...ops.filter((op) => op.op === "link")];
  const runs: OpRun[] = [];
  for (const op of ordered) {
    if (op.op === "drop") continue;
    const last = runs.at(-1);
    if (op.op === "put") {
      if (last?.kind === "put") last.ops.push(op);
      else runs.push({ kind: "put", ops: [op] });
    } else if (last?.kind === "link") last.ops.push(op);
    else runs.push({ kind: "link", ops: [op] });
  }
  return runs;
}

/** Entry columns a put writes, after id, tenant and scope: `entryValues` with the spaces, then the times. */
const putColumns = [
  ["status", "text"],
  ["page", "int"],
  ["digest", "text"],
  ["routing_text", "text"],
  ["tokens", "int"],
  ["space", "text"],
  ["vector", "text"],
  ["vector_weight", "int"],
  ["image_space", "text"],
  ["image_vector", "text"],
  ["image_weight", "int"],
  ["sessions", "text"],
  ["time_start_ms", "bigint"],
  ["time_end_ms", "bigint"],
  ["predecessor", "text"],
  ["host", "text"],
  ["last_action", "text"],
  ["relation", "text"],
  ["created_ms", "bigint"],
  ["updated_ms", "bigint"],
] as const;

/**
 * Puts entries in one statement. An id put twice in the run ends as the sequence of upserts would
 * leave it: the last put's values, the first one's creation time (an upsert never rewrites it) and
 * its place in storage order.
 */
async function putEntries(
  context: ScopeContext,
  sql: Sql,
  ops: readonly PutOp[],
  spaces: { readonly text: string; readonly image: string | null },
): Promise<void> {
  const rows = new Map<string, unknown[]>();
  for (const { entry } of ops) {
    const createdMs = rows.get(entry.id)?.at(-2) ?? entry.createdMs;
    rows.set(entry.id, [
      ...entryValues(entry, { text: spaces.text, image: entry.imageVector ? spaces.image : null }),
      createdMs,
      entry.updatedMs,
    ]);
  }
  const columns = putColumns.map((_, index) => [...rows.values()].map((row) => row[index]));
  const names = putColumns.map(([name]) => name);
  const unnested = putColumns.map(([, type], index) => `$${index + 4}::${type}[]`).join(", ");
  const selected = names.map((name) =>
    name === "vector" || name === "image_vector" ? `u.${name}::vector` : `u.${name}`,
  );
  await sql.query(
    `INSERT INTO index_entries (id, tenant, scope_key, ${names.join(", ")})
     SELECT u.id, $2, $3, ${selected.join(", ")}
     FROM unnest($1::text[], ${unnested}) WITH ORDINALITY AS u (id, ${names.join(", ")}, position)
     ORDER BY u.position
     ON CONFLICT (scope_key, id) DO UPDATE SET status = excluded.status, page = excluded.page,
       digest = excluded.digest, routing_text = excluded.routing_text, tokens = excluded.tokens,
       vector = excluded.vector, vector_weight = excluded.vector_weight, image_space = excluded.image_space,
       image_vector = excluded.image_vector, image_weight = excluded.image_weight, sessions = excluded.sessions,
       time_start_ms = excluded.time_start_ms, time_end_ms = excluded.time_end_ms,
       predecessor = excluded.predecessor, host = excluded.host, last_action = excluded.last_action,
       relation = excluded.relation, updated_ms = excluded.updated_ms`,
    [[...rows.keys()], context.tenant, context.key, ...columns],
  );
}

/**
 * Links pointers to entries in one statement, as the links one after another would: each pointer
 * once per entry, appended after the entry's last ordinal in the order named, the ones already
 * linked keeping their place. Every entry must exist in the scope.
 */
async function linkPointers(
  context: ScopeContext,
  sql: Sql,
  ops: readonly LinkOp[],
  resolve: (pointers: readonly string[]) => Promise<number[]>,
): Promise<void> {
  const nodes = await resolve(ops.flatMap((op) => op.pointers));
  const entryIds = ops.flatMap((op) => op.pointers.map(() => op.entryId));
  const found = await sql.query<{ id: string }>(
    `WITH wanted AS (
       SELECT * FROM unnest($2::text[], $3::bigint[]) WITH ORDINALITY AS w (entry_id, node, position)
     ), entries AS (
       SELECT e.id, e.rowid,
         (SELECT coalesce(max(p.ordinal), -1) + 1 FROM index_pointers p WHERE p.entry_rowid = e.rowid) AS next
       FROM index_entries e WHERE e.scope_key = $1 AND e.id = ANY($5::text[])
     ), fresh AS (
       SELECT en.rowid AS entry_rowid, en.next, w.node, min(w.position) AS position
       FROM wanted w JOIN entries en ON en.id = w.entry_id
       WHERE NOT EXISTS (SELECT 1 FROM index_pointers p WHERE p.entry_rowid = en.rowid AND p.raw_node_rowid = w.node)
       GROUP BY en.rowid, en.next, w.node
     ), linked AS (
       INSERT INTO index_pointers (entry_rowid, raw_node_rowid, tenant, ordinal)
       SELECT entry_rowid, node, $4, next + ROW_NUMBER() OVER (PARTITION BY entry_rowid ORDER BY position) - 1
       FROM fresh
     )
     SELECT id FROM entries`,
    [context.key, entryIds, nodes, context.tenant, [...new Set(ops.map((op) => op.entryId))]],
  );
  const known = new Set(found.map((row) => row.id));
  const unknown = ops.find((op) => !known.has(op.entryId));
  if (unknown) throw new InvariantError("index plan", `link to unknown entry ${unknown.entryId}`);
}

async function bumpVersion(context: ScopeContext, sql: Sql): Promise<void> {
  await sql.query(`${bumpVersionStatement("$1", "$2")}`, [context.key, context.tenant]);
}

/** The upsert that moves a scope's index version on by one, its key and tenant given as these SQL expressions. */
export function bumpVersionStatement(key: string, tenant: string): string {
  return `INSERT INTO index_state (scope_key, tenant, version) VALUES (${key}, ${tenant}, 1)
     ON CONFLICT (scope_key) DO UPDATE SET version = index_state.version + 1`;
}

/**
 * An entry's column values in the order `status, page, digest, routing_text, tokens, space, vector,
 * vector_weight, image_space, image_vector, image_weight, sessions, time_start_ms, time_end_ms,
 * predecessor, host, last_action, relation`; `spaces` null for a rewrite, which keeps the stored spaces.
 */
function entryValues(entry: IndexEntry, spaces: { text: string; image: string | null } | null): unknown[] {
  const space = spaces ? [spaces.text] : [];
  const imageSpace = spaces ? [spaces.image] : [];
  return [
    entry.status,
    entry.page,
    JSON.stringify(entry.digest),
    entry.routingText,
    entry.tokens,
    ...space,
    vectorLiteral(entry.vector),
    entry.vectorWeight,
    ...imageSpace,
    entry.imageVector ? vectorLiteral(entry.imageVector) : null,
    entry.imageWeight,
    JSON.stringify(entry.sessions),
    entry.timeStartMs,
    entry.timeEndMs,
    entry.predecessor,
    entry.host,
    entry.lastAction,
    entry.relation,
  ];
}

/** A plan without a base version may only create entries and link pointers to them. */
async function checkIndependent(context: ScopeContext, sql: Sql, plan: MaintenancePlan): Promise<void> {
  const putIds = plan.ops.flatMap((op) => (op.op === "put" ? [op.entry.id] : []));
  const existing = new Set(
    (
      await sql.query<{ id: string }>("SELECT id FROM index_entries WHERE scope_key = $1 AND id = ANY($2::text[])", [
        context.key,
        putIds,
      ])
    ).map((row) => row.id),
  );
  const created = new Set<string>();
  for (const op of plan.ops) {
    if (op.op === "put") {
      if (!created.has(op.entry.id) && existing.has(op.entry.id)) {
        throw new InvariantError("index plan", `a plan without a base version changes existing entry ${op.entry.id}`);
      }
      created.add(op.entry.id);
    } else if (op.op === "link" && !created.has(op.entryId)) {
      throw new InvariantError("index plan", `a plan without a base version links existing entry ${op.entryId}`);
    }
  }
}

/**
 * Applies the index side of a forget (see `applyForgetPlan` in ../index-plan.ts for the reference
 * semantics): pointers to the forgotten raw nodes go, re-derived or re-linked entries are
 * rewritten (their vector spaces stay), and an entry is removed only once it points at nothing.
 * Runs inside the forget's transaction, under the scope's lock, before the raw-node rows go.
 */
export async function applyForgetOps(
  context: ScopeContext,
  sql: Sql,
  plan: ForgetPlan,
  rowidOfNode: ReadonlyMap<string, number>,
): Promise<void> {
  const forgotten = new Set(plan.rawNodeIds);
  const entryRowid = async (id: string): Promise<number> => {
    const [row] = await sql.query<{ rowid: number }>(
      "SELECT rowid FROM index_entries WHERE scope_key = $1 AND id = $2",
      [context.key, id],
    );
    if (!row) throw new InvariantError("forget plan", `names entry ${id}, not in this scope's index`);
    return row.rowid;
  };
  for (const op of plan.ops) {
    if (op.op === "unlink") {
      const rowid = await entryRowid(op.entryId);
      const nodes = op.pointers.map((pointer) => {
        const node = forgotten.has(pointer) ? rowidOfNode.get(pointer) : undefined;
        if (node === undefined) {
          throw new InvariantError("provenance", `forget may not unlink ${pointer}: it is not being forgotten`);
        }
        return node;
      });
      await sql.query("DELETE FROM index_pointers WHERE entry_rowid = $1 AND raw_node_rowid = ANY($2::bigint[])", [
        rowid,
        nodes,
      ]);
    } else if (op.op === "put") {
      const rowid = await entryRowid(op.entry.id);
      await sql.query(
        `UPDATE index_entries SET status = $2, page = $3, digest = $4, routing_text = $5, tokens = $6,
           vector = $7::text::vector, vector_weight = $8, image_vector = $9::text::vector, image_weight = $10,
           sessions = $11, time_start_ms = $12, time_end_ms = $13, predecessor = $14, host = $15, last_action = $16,
           relation = $17, updated_ms = $18
         WHERE rowid = $1`,
        [rowid, ...entryValues(op.entry, null), op.entry.updatedMs],
      );
    } else {
      const rowid = await entryRowid(op.entryId);
      const [linked] = await sql.query<{ n: number }>(
        "SELECT count(*) AS n FROM index_pointers WHERE entry_rowid = $1",
        [rowid],
      );
      if ((linked?.n ?? 0) !== 0) {
        throw new InvariantError(
          "provenance",
          `forget may not remove entry ${op.entryId}: it still points at evidence`,
        );
      }
      await sql.query("DELETE FROM index_entries WHERE rowid = $1", [rowid]);
    }
  }
  await bumpVersion(context, sql);
}

/** Empties the scope's index (a rebuild starts here); its version goes on counting. */
export async function forgetWholeIndex(context: ScopeContext, sql: Sql): Promise<void> {
  await sql.query("DELETE FROM index_entries WHERE scope_key = $1", [context.key]);
}

function toEntry(row: EntryRow): IndexEntry {
  return {
    id: row.id,
    status: row.status,
    page: row.page,
    digest: JSON.parse(row.digest) as EntryDigest,
    routingText: row.routing_text,
    tokens: row.tokens,
    vector: vectorFromSend(row.vector),
    vectorWeight: row.vector_weight,
    imageVector: row.image_vector ? vectorFromSend(row.image_vector) : null,
    imageWeight: row.image_weight,
    pointers: row.pointers,
    sessions: JSON.parse(row.sessions) as string[],
    timeStartMs: row.time_start_ms,
    timeEndMs: row.time_end_ms,
    predecessor: row.predecessor,
    host: row.host,
    lastAction: row.last_action,
    relation: row.relation,
    createdMs: row.created_ms,
    updatedMs: row.updated_ms,
  };
}
