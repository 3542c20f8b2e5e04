import type { Database } from "better-sqlite3";
import { InvariantError } from "../../core/errors.ts";
import { vectorBytes, vectorFromBytes } from "../../core/vectors.ts";
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
import { statement } from "./statements.ts";

/**
 * Rows of the active index (C3M): entries, their pointers to raw nodes, and a per-scope version
 * for optimistic concurrency. Every function takes the scope key and binds it; callers run them
 * inside the scoped store's transactions.
 */

interface EntryRow {
  rowid: number;
  id: string;
  status: EntryStatus;
  page: number | null;
  digest: string;
  routing_text: string;
  tokens: number;
  space: string;
  vector: Buffer;
  vector_weight: number;
  image_space: string | null;
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
}

export function indexVersion(db: Database, key: string): number {
  const row = statement(db, "SELECT version FROM index_state WHERE scope_key = ?").get(key) as
    | { version: number }
    | undefined;
  return row?.version ?? 0;
}

/** The index of one scope: only active entries (what maintenance plans against) or all of them. */
export function readIndex(db: Database, key: string, options: { activeOnly: boolean }): IndexState {
  // One snapshot for the version and the entries: read apart, a commit landing between them labelled
  // old entries with the new version, and a plan made from them passed the version check (a forget
  // removed an entry that a concurrent update had just made some entry's predecessor).
  return db.transaction(() => readIndexSnapshot(db, key, options))();
}

function readIndexSnapshot(db: Database, key: string, options: { activeOnly: boolean }): IndexState {
  const version = indexVersion(db, key);
  const rows = statement(
    db,
    `SELECT * FROM index_entries WHERE scope_key = ? ${options.activeOnly ? "AND status = 'active'" : ""} ORDER BY rowid`,
  ).all(key) as EntryRow[];
  const pointers = statement(
    db,
    `SELECT r.id FROM index_pointers p JOIN raw_nodes r ON r.rowid = p.raw_node_rowid
       WHERE p.entry_rowid = ? ORDER BY p.ordinal`,
    "pluck",
  );
  const entries = new Map<string, IndexEntry>();
  for (const row of rows) entries.set(row.id, toEntry(row, pointers.all(row.rowid) as string[]));
  return { version, entries };
}

/**
 * Entries hosted by `hosts` (not merged ones: their pointers are their host's) and entries named by
 * `ids` (any status), with their pointers.
 */
export function readLinked(
  db: Database,
  key: string,
  options: {
    readonly hosts: readonly string[];
    readonly ids: readonly string[];
  },
): IndexEntry[] {
  if (options.hosts.length === 0 && options.ids.length === 0) return [];
  // Two statements, not one with OR: SQLite would answer the OR by scanning the scope's entries.
  const hosted = statement(
    db,
    "SELECT * FROM index_entries WHERE scope_key = ? AND host IN (SELECT value FROM json_each(?)) AND status != 'merged'",
  ).all(key, JSON.stringify(options.hosts)) as EntryRow[];
  // `+scope_key` keeps the planner on the id index (it would rather scan the scope's entries).
  const named = statement(
    db,
    "SELECT * FROM index_entries WHERE id IN (SELECT value FROM json_each(?)) AND +scope_key = ?",
  ).all(JSON.stringify(options.ids), key) as EntryRow[];
  const rows = [...new Map([...hosted, ...named].map((row) => [row.rowid, row])).values()].sort(
    (a, b) => a.rowid - b.rowid,
  );
  const pointers = statement(
    db,
    `SELECT r.id FROM index_pointers p JOIN raw_nodes r ON r.rowid = p.raw_node_rowid
       WHERE p.entry_rowid = ? ORDER BY p.ordinal`,
    "pluck",
  );
  return rows.map((row) => toEntry(row, pointers.all(row.rowid) as string[]));
}

/**
 * Applies a maintenance plan. `resolve` maps a pointer (a stored raw-node id, or `@n` for the
 * n-th raw node of the session being committed) to a raw-node rowid in this scope.
 */
export function applyPlan(
  db: Database,
  key: string,
  plan: MaintenancePlan,
  spaces: { readonly text: string; readonly image: string | null },
  resolve: (pointer: string) => number,
): void {
  const version = indexVersion(db, key);
  if (plan.baseVersion === null) checkIndependent(db, plan);
  else if (version !== plan.baseVersion) throw new IndexVersionConflict(plan.baseVersion, version);
  const upsert = statement(
    db,
    `INSERT INTO index_entries (id, scope_key, status, page, digest, routing_text, tokens, space, vector, vector_weight,
       image_space, image_vector, image_weight, sessions, time_start_ms, time_end_ms, predecessor, host, last_action,
       relation, created_ms, updated_ms)
     VALUES (@id, @scope_key, @status, @page, @digest, @routing_text, @tokens, @space, @vector, @vector_weight,
       @image_space, @image_vector, @image_weight, @sessions, @time_start_ms, @time_end_ms, @predecessor, @host,
       @last_action, @relation, @created_ms, @updated_ms)
     ON CONFLICT (id) DO UPDATE SET status = excluded.status, page = excluded.page, digest = excluded.digest,
       routing_text = excluded.routing_text, tokens = excluded.tokens, vector = excluded.vector,
       vector_weight = excluded.vector_weight, image_space = excluded.image_space, image_vector = excluded.image_vector,
       image_weight = excluded.image_weight, sessions = excluded.sessions, time_start_ms = excluded.time_start_ms,
       time_end_ms = excluded.time_end_ms, predecessor = excluded.predecessor, host = excluded.host,
       last_action = excluded.last_action, relation = excluded.relation, updated_ms = excluded.updated_ms
     WHERE index_entries.scope_key = excluded.scope_key`,
  );
  const rowidOf = statement(db, "SELECT rowid FROM index_entries WHERE scope_key = ? AND id = ?", "pluck");
  const nextOrdinal = statement(
    db,
    "SELECT coalesce(max(ordinal), -1) + 1 FROM index_pointers WHERE entry_rowid = ?",
    "pluck",
  );
  const link = statement(
    db,
    "INSERT OR IGNORE INTO index_pointers (entry_rowid, raw_node_rowid, ordinal) VALUES (?, ?, ?)",
  );
  for (const op of plan.ops) {
    if (op.op === "drop")
      throw new InvariantError("provenance", "maintenance may not drop an entry: only forget removes index rows");
    if (op.op === "put") {
      const entry = op.entry;
      upsert.run(entryColumns(key, entry, spaces));
      if (rowidOf.get(key, entry.id) === undefined)
        throw new InvariantError("isolation", `entry ${entry.id} belongs to another scope`);
      continue;
    }
    const entryRowid = rowidOf.get(key, op.entryId) as number | undefined;
    if (entryRowid === undefined) throw new InvariantError("index plan", `link to unknown entry ${op.entryId}`);
    let ordinal = nextOrdinal.get(entryRowid) as number;
    for (const pointer of op.pointers) {
      if (link.run(entryRowid, resolve(pointer), ordinal).changes > 0) ordinal++;
    }
  }
  bumpVersion(db, key);
}

function bumpVersion(db: Database, key: string): void {
  statement(
    db,
    `INSERT INTO index_state (scope_key, version) VALUES (?, 1)
     ON CONFLICT (scope_key) DO UPDATE SET version = version + 1`,
  ).run(key);
}

/** An entry as the named parameters of the index_entries statements. */
function entryColumns(
  key: string,
  entry: IndexEntry,
  spaces: { readonly text: string; readonly image: string | null },
): Record<string, unknown> {
  return {
    id: entry.id,
    scope_key: key,
    status: entry.status,
    page: entry.page,
    digest: JSON.stringify(entry.digest),
    routing_text: entry.routingText,
    tokens: entry.tokens,
    space: spaces.text,
    vector: vectorBytes(entry.vector),
    vector_weight: entry.vectorWeight,
    image_space: entry.imageVector ? spaces.image : null,
    image_vector: entry.imageVector ? vectorBytes(entry.imageVector) : null,
    image_weight: entry.imageWeight,
    sessions: JSON.stringify(entry.sessions),
    time_start_ms: entry.timeStartMs,
    time_end_ms: entry.timeEndMs,
    predecessor: entry.predecessor,
    host: entry.host,
    last_action: entry.lastAction,
    relation: entry.relation,
    created_ms: entry.createdMs,
    updated_ms: entry.updatedMs,
  };
}

/** A plan without a base version may only create entries and link pointers to them. */
function checkIndependent(db: Database, plan: MaintenancePlan): void {
  const exists = statement(db, "SELECT 1 FROM index_entries WHERE id = ?", "pluck");
  const created = new Set<string>();
  for (const op of plan.ops) {
    if (op.op === "put") {
      if (!created.has(op.entry.id) && exists.get(op.entry.id)) {
        throw new InvariantError("index plan", `a plan without a base version changes existing entry ${op.entry.id}`);
      }
      created.add(op.entry.id);
    } else if (op.op === "link" && !created.has(op.entryId)) {
      throw new InvariantError("index plan", `a plan without a base version links existing entry ${op.entryId}`);
    }
  }
}

/**
 * Applies the index side of a forget (see `applyForgetPlan` in ../index-plan.ts for the
 * reference semantics): pointers to the forgotten raw nodes go, re-derived or re-linked entries
 * are rewritten (their vector spaces stay), and an entry is removed only once it points at
 * nothing. Runs inside the forget's transaction, before the raw-node rows are deleted.
 */
export function applyForgetOps(
  db: Database,
  key: string,
  plan: ForgetPlan,
  rowidOfNode: (id: string) => number | undefined,
): void {
  const version = indexVersion(db, key);
  if (version !== plan.baseVersion) throw new IndexVersionConflict(plan.baseVersion, version);
  const forgotten = new Set(plan.rawNodeIds);
  const rowidOf = statement(db, "SELECT rowid FROM index_entries WHERE scope_key = ? AND id = ?", "pluck");
  const entryRowid = (id: string): number => {
    const rowid = rowidOf.get(key, id);
    if (typeof rowid !== "number")
      throw new InvariantError("forget plan", `names entry ${id}, not in this scope's index`);
    return rowid;
  };
  const unlink = statement(db, "DELETE FROM index_pointers WHERE entry_rowid = ? AND raw_node_rowid = ?");
  const update = statement(
    db,
    `UPDATE index_entries SET status = @status, page = @page, digest = @digest, routing_text = @routing_text,
       tokens = @tokens, vector = @vector, vector_weight = @vector_weight, image_vector = @image_vector,
       image_weight = @image_weight, sessions = @sessions, time_start_ms = @time_start_ms, time_end_ms = @time_end_ms,
       predecessor = @predecessor, host = @host, last_action = @last_action, relation = @relation, updated_ms = @updated_ms
     WHERE scope_key = @scope_key AND id = @id`,
  );
  const pointerCount = statement(db, "SELECT count(*) FROM index_pointers WHERE entry_rowid = ?", "pluck");
  const remove = statement(db, "DELETE FROM index_entries WHERE rowid = ?");
  for (const op of plan.ops) {
    if (op.op === "unlink") {
      const rowid = entryRowid(op.entryId);
      for (const pointer of op.pointers) {
        const node = forgotten.has(pointer) ? rowidOfNode(pointer) : undefined;
        if (node === undefined) {
          throw new InvariantError("provenance", `forget may not unlink ${pointer}: it is not being forgotten`);
        }
        unlink.run(rowid, node);
      }
    } else if (op.op === "put") {
      entryRowid(op.entry.id);
      const {
        space: _space,
        image_space: _imageSpace,
        created_ms: _created,
        ...fields
      } = entryColumns(key, op.entry, {
        text: "",
        image: null,
      });
      update.run(fields);
    } else {
      const rowid = entryRowid(op.entryId);
      if (pointerCount.get(rowid) !== 0) {
        throw new InvariantError(
          "provenance",
          `forget may not remove entry ${op.entryId}: it still points at evidence`,
        );
      }
      remove.run(rowid);
    }
  }
  bumpVersion(db, key);
}

export function forgetWholeIndex(db: Database, key: string): number {
  statement(
    db,
    "DELETE FROM index_pointers WHERE entry_rowid IN (SELECT rowid FROM index_entries WHERE scope_key = ?)",
  ).run(key);
  const removed = statement(db, "DELETE FROM index_entries WHERE scope_key = ?").run(key).changes;
  statement(db, "UPDATE index_state SET version = version + 1 WHERE scope_key = ?").run(key);
  return removed;
}

function toEntry(row: EntryRow, pointers: readonly string[]): IndexEntry {
  return {
    id: row.id,
    status: row.status,
    page: row.page,
    digest: JSON.parse(row.digest) as EntryDigest,
    routingText: row.routing_text,
    tokens: row.tokens,
    vector: vectorFromBytes(row.vector),
    vectorWeight: row.vector_weight,
    imageVector: row.image_vector ? vectorFromBytes(row.image_vector) : null,
    imageWeight: row.image_weight,
    pointers,
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
