import type { Database } from "better-sqlite3";
import { meanVector, vectorBytes, vectorFromBytes } from "../../core/vectors.ts";
import { buildDigest, renderRoutingText } from "../../maintain/digest.ts";
import {
  type EntryDigest,
  type EntryStatus,
  type IndexEntry,
  type IndexState,
  IndexVersionConflict,
  type MaintenancePlan,
  type Relation,
} from "../index-records.ts";
import type { Entry } from "../records.ts";

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
  const row = db.prepare("SELECT version FROM index_state WHERE scope_key = ?").get(key) as
    | { version: number }
    | undefined;
  return row?.version ?? 0;
}

/** The index of one scope: only active entries (what maintenance plans against) or all of them. */
export function readIndex(db: Database, key: string, options: { activeOnly: boolean }): IndexState {
  const rows = db
    .prepare(
      `SELECT * FROM index_entries WHERE scope_key = ? ${options.activeOnly ? "AND status = 'active'" : ""} ORDER BY rowid`,
    )
    .all(key) as EntryRow[];
  const pointers = db
    .prepare(
      `SELECT r.id FROM index_pointers p JOIN raw_nodes r ON r.rowid = p.raw_node_rowid
       WHERE p.entry_rowid = ? ORDER BY p.ordinal`,
    )
    .pluck();
  const entries = new Map<string, IndexEntry>();
  for (const row of rows) entries.set(row.id, toEntry(row, pointers.all(row.rowid) as string[]));
  return { version: indexVersion(db, key), entries };
}

/**
 * Entries hosted by `hosts` (not merged ones: their pointers are their host's) and entries named by
 * `ids` (any status), with their pointers. With `nearest`, only each host's `perHost` entries
 * closest to `vector` are read: a host can hold hundreds of overflowed entries in a long history,
 * and the cosine is computed in SQLite (sqlite-vec) before any row is decoded.
 */
export function readLinked(
  db: Database,
  key: string,
  options: {
    readonly hosts: readonly string[];
    readonly ids: readonly string[];
    readonly nearest?: { readonly vector: Float32Array; readonly perHost: number };
  },
): IndexEntry[] {
  if (options.hosts.length === 0 && options.ids.length === 0) return [];
  const hosts = JSON.stringify(options.hosts);
  // Two statements, not one with OR: SQLite would answer the OR by scanning the scope's entries.
  const hosted = (
    options.nearest
      ? db
          .prepare(
            `SELECT e.* FROM (
               SELECT rowid, ROW_NUMBER() OVER (PARTITION BY host ORDER BY vec_distance_cosine(vector, ?)) AS rank
               FROM index_entries
               WHERE scope_key = ? AND host IN (SELECT value FROM json_each(?)) AND status != 'merged'
                 AND length(vector) = ?
             ) ranked JOIN index_entries e ON e.rowid = ranked.rowid WHERE ranked.rank <= ?`,
          )
          .all(
            vectorBytes(options.nearest.vector),
            key,
            hosts,
            options.nearest.vector.byteLength,
            options.nearest.perHost,
          )
      : db
          .prepare(
            "SELECT * FROM index_entries WHERE scope_key = ? AND host IN (SELECT value FROM json_each(?)) AND status != 'merged'",
          )
          .all(key, hosts)
  ) as EntryRow[];
  const named = db
    // `+scope_key` keeps the planner on the id index (it would rather scan the scope's entries).
    .prepare("SELECT * FROM index_entries WHERE id IN (SELECT value FROM json_each(?)) AND +scope_key = ?")
    .all(JSON.stringify(options.ids), key) as EntryRow[];
  const rows = [...new Map([...hosted, ...named].map((row) => [row.rowid, row])).values()].sort(
    (a, b) => a.rowid - b.rowid,
  );
  const pointers = db
    .prepare(
      `SELECT r.id FROM index_pointers p JOIN raw_nodes r ON r.rowid = p.raw_node_rowid
       WHERE p.entry_rowid = ? ORDER BY p.ordinal`,
    )
    .pluck();
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
  const upsert = db.prepare(
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
  const rowidOf = db.prepare("SELECT rowid FROM index_entries WHERE scope_key = ? AND id = ?").pluck();
  const nextOrdinal = db
    .prepare("SELECT coalesce(max(ordinal), -1) + 1 FROM index_pointers WHERE entry_rowid = ?")
    .pluck();
  const link = db.prepare(
    "INSERT OR IGNORE INTO index_pointers (entry_rowid, raw_node_rowid, ordinal) VALUES (?, ?, ?)",
  );
  for (const op of plan.ops) {
    if (op.op === "drop") throw new Error("maintenance may not drop an entry: only forget removes index rows");
    if (op.op === "put") {
      const entry = op.entry;
      upsert.run({
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
      });
      if (rowidOf.get(key, entry.id) === undefined) throw new Error(`entry ${entry.id} belongs to another scope`);
      continue;
    }
    const entryRowid = rowidOf.get(key, op.entryId) as number | undefined;
    if (entryRowid === undefined) throw new Error(`link to unknown entry ${op.entryId}`);
    let ordinal = nextOrdinal.get(entryRowid) as number;
    for (const pointer of op.pointers) {
      if (link.run(entryRowid, resolve(pointer), ordinal).changes > 0) ordinal++;
    }
  }
  db.prepare(
    `INSERT INTO index_state (scope_key, version) VALUES (?, 1)
     ON CONFLICT (scope_key) DO UPDATE SET version = version + 1`,
  ).run(key);
}

/** A plan without a base version may only create entries and link pointers to them. */
function checkIndependent(db: Database, plan: MaintenancePlan): void {
  const exists = db.prepare("SELECT 1 FROM index_entries WHERE id = ?").pluck();
  const created = new Set<string>();
  for (const op of plan.ops) {
    if (op.op === "put") {
      if (!created.has(op.entry.id) && exists.get(op.entry.id)) {
        throw new Error(`a plan without a base version changes existing entry ${op.entry.id}`);
      }
      created.add(op.entry.id);
    } else if (op.op === "link" && !created.has(op.entryId)) {
      throw new Error(`a plan without a base version links existing entry ${op.entryId}`);
    }
  }
}

/**
 * Forget's cascade into the index, run before the raw nodes go: pointers to them are removed,
 * entries that keep some pointers are re-derived from what remains (their routing text may quote
 * forgotten text), and entries left with none are removed with their links repaired so that every
 * remaining raw node stays reachable. Returns the number of entries removed.
 */
export function forgetFromIndex(
  db: Database,
  key: string,
  nodeRowids: readonly number[],
  vectorTable: (space: string) => string | null,
): { removed: number; rebuilt: number } {
  const nodes = JSON.stringify(nodeRowids);
  const touched = db
    .prepare(
      `SELECT DISTINCT e.id FROM index_pointers p JOIN index_entries e ON e.rowid = p.entry_rowid
       WHERE e.scope_key = ? AND p.raw_node_rowid IN (SELECT value FROM json_each(?))`,
    )
    .pluck()
    .all(key, nodes) as string[];
  db.prepare(
    `DELETE FROM index_pointers WHERE raw_node_rowid IN (SELECT value FROM json_each(?))
       AND entry_rowid IN (SELECT rowid FROM index_entries WHERE scope_key = ?)`,
  ).run(nodes, key);
  if (touched.length === 0) return { removed: 0, rebuilt: 0 };
  const forgotten = new Set(nodeRowids);
  let removed = 0;
  let rebuilt = 0;
  for (const id of touched) {
    const row = db.prepare("SELECT * FROM index_entries WHERE scope_key = ? AND id = ?").get(key, id) as
      | EntryRow
      | undefined;
    if (!row) continue;
    const remaining = db
      .prepare(
        `SELECT r.rowid, r.speaker, r.text, r.time_ms, s.session_key FROM index_pointers p
         JOIN raw_nodes r ON r.rowid = p.raw_node_rowid JOIN sessions s ON s.rowid = r.session_rowid
         WHERE p.entry_rowid = ? ORDER BY p.ordinal`,
      )
      .all(row.rowid) as {
      rowid: number;
      speaker: string | null;
      text: string;
      time_ms: number;
      session_key: string;
    }[];
    const kept = remaining.filter((node) => !forgotten.has(node.rowid));
    if (kept.length === 0) {
      removeEntry(db, key, row);
      removed++;
    } else {
      rederive(db, key, row, kept, vectorTable);
      rebuilt++;
    }
  }
  return { removed, rebuilt };
}

function removeEntry(db: Database, key: string, row: EntryRow): void {
  const children = db
    .prepare("SELECT id FROM index_entries WHERE scope_key = ? AND host = ? ORDER BY time_end_ms DESC, rowid")
    .pluck()
    .all(key, row.id) as string[];
  const successor = db
    .prepare("SELECT id FROM index_entries WHERE scope_key = ? AND predecessor = ?")
    .pluck()
    .get(key, row.id) as string | undefined;
  const setHost = db.prepare("UPDATE index_entries SET host = ? WHERE scope_key = ? AND id = ?");
  if (row.status === "active") {
    // Something must take the entry's place, or what it reached becomes unreachable.
    const heir = row.predecessor ?? children[0] ?? null;
    if (heir) {
      db.prepare(
        "UPDATE index_entries SET status = 'active', page = ?, host = NULL, last_action = 'promoted' WHERE scope_key = ? AND id = ?",
      ).run(row.page, key, heir);
      for (const child of children) if (child !== heir) setHost.run(heir, key, child);
    }
  } else {
    // Reachable through a parent: the successor (for an earlier state) or the host.
    const parent = row.status === "superseded" ? successor : row.host;
    if (row.predecessor) {
      if (successor && row.status === "superseded") {
        db.prepare("UPDATE index_entries SET predecessor = ? WHERE scope_key = ? AND id = ?").run(
          row.predecessor,
          key,
          successor,
        );
      } else if (parent) setHost.run(parent, key, row.predecessor);
    }
    for (const child of children) setHost.run(parent ?? null, key, child);
  }
  if (successor && (row.status === "active" || !row.predecessor)) {
    db.prepare("UPDATE index_entries SET predecessor = ? WHERE scope_key = ? AND id = ?").run(
      row.status === "active" ? null : row.predecessor,
      key,
      successor,
    );
  }
  db.prepare("DELETE FROM index_pointers WHERE entry_rowid = ?").run(row.rowid);
  db.prepare("DELETE FROM index_entries WHERE rowid = ?").run(row.rowid);
}

function rederive(
  db: Database,
  key: string,
  row: EntryRow,
  kept: readonly { rowid: number; speaker: string | null; text: string; time_ms: number; session_key: string }[],
  vectorTable: (space: string) => string | null,
): void {
  const imageRows = db.prepare(
    "SELECT ordinal, blob_hash, caption, derived_text FROM raw_node_images WHERE raw_node_rowid = ? ORDER BY ordinal",
  );
  const images = new Map(
    kept.map((node) => [
      node.rowid,
      imageRows.all(node.rowid) as {
        ordinal: number;
        blob_hash: string | null;
        caption: string | null;
        derived_text: string | null;
      }[],
    ]),
  );
  const digest = buildDigest(
    kept.map((node) => ({
      speaker: node.speaker,
      text: node.text,
      imageText: (images.get(node.rowid) ?? []).flatMap((image) =>
        [image.caption, image.derived_text].filter((text): text is string => !!text),
      ),
    })),
  );
  const times = kept.map((node) => node.time_ms);
  const span = { startMs: Math.min(...times), endMs: Math.max(...times) };
  const routing = renderRoutingText(digest, span, Math.max(1, row.tokens));
  const table = vectorTable(row.space);
  const vectors = table
    ? kept.flatMap((node) => {
        const blob = db.prepare(`SELECT embedding FROM ${table} WHERE rowid = ?`).pluck().get(BigInt(node.rowid)) as
          | Buffer
          | undefined;
        return blob ? [vectorFromBytes(blob)] : [];
      })
    : [];
  const imageVectors = row.image_space
    ? kept.flatMap((node) =>
        (images.get(node.rowid) ?? []).flatMap((image) => {
          if (!image.blob_hash) return [];
          const blob = db
            .prepare("SELECT vector FROM blob_vectors WHERE blob_hash = ? AND space = ?")
            .pluck()
            .get(image.blob_hash, row.image_space) as Buffer | undefined;
          return blob ? [vectorFromBytes(blob)] : [];
        }),
      )
    : [];
  const vector = meanVector(vectors);
  const imageVector = meanVector(imageVectors);
  db.prepare(
    `UPDATE index_entries SET digest = ?, routing_text = ?, tokens = ?, vector = ?, vector_weight = ?, image_vector = ?,
       image_weight = ?, sessions = ?, time_start_ms = ?, time_end_ms = ? WHERE scope_key = ? AND rowid = ?`,
  ).run(
    JSON.stringify(digest),
    routing.text,
    routing.tokens,
    vector ? vectorBytes(vector) : row.vector,
    vectors.length,
    imageVector ? vectorBytes(imageVector) : null,
    imageVectors.length,
    JSON.stringify([...new Set(kept.map((node) => node.session_key))]),
    span.startMs,
    span.endMs,
    key,
    row.rowid,
  );
}

export function forgetWholeIndex(db: Database, key: string): number {
  db.prepare(
    "DELETE FROM index_pointers WHERE entry_rowid IN (SELECT rowid FROM index_entries WHERE scope_key = ?)",
  ).run(key);
  const removed = db.prepare("DELETE FROM index_entries WHERE scope_key = ?").run(key).changes;
  db.prepare("UPDATE index_state SET version = version + 1 WHERE scope_key = ?").run(key);
  return removed;
}

export function toPublicEntry(entry: IndexEntry): Entry {
  return {
    id: entry.id,
    status: entry.status,
    page: entry.page,
    routingText: entry.routingText,
    tokens: entry.tokens,
    sessions: entry.sessions,
    timeStart: new Date(entry.timeStartMs).toISOString(),
    timeEnd: new Date(entry.timeEndMs).toISOString(),
    pointers: entry.pointers,
    predecessor: entry.predecessor,
    host: entry.host,
    lastAction: entry.lastAction,
    relation: entry.relation,
    latest: entry.status === "active",
    entities: Object.keys(entry.digest.entities),
    createdAt: new Date(entry.createdMs).toISOString(),
    updatedAt: new Date(entry.updatedMs).toISOString(),
  };
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
