import type { Database } from "better-sqlite3";
import { rebuildLexicalIndex } from "./lexical-index.ts";
import { reindexCjk } from "./reindex-cjk.ts";
import { ensureTenant, tenantKeyRange, tenantStorage } from "./tenants.ts";
import { plainTableOf, plainTableSql } from "./vector-rows.ts";

/**
 * Versioned schema. A migration runs once, inside a transaction, and is never edited after
 * release: add a new one instead. Vector tables are not here: one vec0 table per vector
 * space is created on first use (see `vector_spaces`).
 */
const migrations: readonly { version: number; name: string; sql: string; run?: (db: Database) => void }[] = [
  {
    version: 1,
    name: "cold store, entries, lexical channels, audit",
    sql: `
      CREATE TABLE sessions (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        scope_key TEXT NOT NULL,
        session_key TEXT NOT NULL,
        time_ms INTEGER NOT NULL,
        source TEXT,
        content_hash TEXT NOT NULL,
        turn_count INTEGER NOT NULL,
        image_count INTEGER NOT NULL,
        created_ms INTEGER NOT NULL,
        UNIQUE (scope_key, session_key)
      );
      CREATE INDEX sessions_by_time ON sessions (scope_key, time_ms);

      CREATE TABLE raw_nodes (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        scope_key TEXT NOT NULL,
        session_rowid INTEGER NOT NULL REFERENCES sessions (rowid),
        turn INTEGER NOT NULL,
        speaker TEXT,
        role TEXT,
        text TEXT NOT NULL,
        time_ms INTEGER NOT NULL,
        source TEXT,
        uri TEXT,
        metadata TEXT NOT NULL
      );
      CREATE INDEX raw_nodes_by_session ON raw_nodes (session_rowid, turn);
      CREATE INDEX raw_nodes_by_scope_time ON raw_nodes (scope_key, time_ms);

      CREATE TABLE blobs (
        hash TEXT PRIMARY KEY,
        media_type TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        width INTEGER NOT NULL,
        height INTEGER NOT NULL
      ) WITHOUT ROWID;

      CREATE TABLE raw_node_images (
        raw_node_rowid INTEGER NOT NULL REFERENCES raw_nodes (rowid),
        ordinal INTEGER NOT NULL,
        -- NULL for a caption-only image: one the source referenced but whose pixels were never available.
        blob_hash TEXT REFERENCES blobs (hash),
        caption TEXT,
        derived_text TEXT,
        origin TEXT,
        PRIMARY KEY (raw_node_rowid, ordinal)
      );
      CREATE INDEX raw_node_images_by_blob ON raw_node_images (blob_hash);

      CREATE VIRTUAL TABLE fts_text USING fts5 (body, tokenize = 'porter unicode61 remove_diacritics 2');
      CREATE VIRTUAL TABLE fts_image_text USING fts5 (body, tokenize = 'porter unicode61 remove_diacritics 2');

      CREATE TABLE entries (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        scope_key TEXT NOT NULL,
        session_rowid INTEGER NOT NULL REFERENCES sessions (rowid),
        routing_text TEXT NOT NULL,
        time_start_ms INTEGER NOT NULL,
        time_end_ms INTEGER NOT NULL,
        created_ms INTEGER NOT NULL
      );
      CREATE INDEX entries_by_scope ON entries (scope_key, time_start_ms);
      CREATE TABLE entry_pointers (
        entry_rowid INTEGER NOT NULL REFERENCES entries (rowid),
        raw_node_rowid INTEGER NOT NULL REFERENCES raw_nodes (rowid),
        PRIMARY KEY (entry_rowid, raw_node_rowid)
      ) WITHOUT ROWID;
      CREATE INDEX entry_pointers_by_node ON entry_pointers (raw_node_rowid);

      CREATE TABLE audit_events (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        scope_key TEXT NOT NULL,
        time_ms INTEGER NOT NULL,
        action TEXT NOT NULL,
        subject TEXT NOT NULL,
        details TEXT NOT NULL
      );
      CREATE INDEX audit_by_scope ON audit_events (scope_key, rowid);

      CREATE TABLE vector_spaces (
        name TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('text', 'image')),
        dimensions INTEGER NOT NULL,
        table_name TEXT NOT NULL UNIQUE
      );
      -- Image vectors depend only on the pixels, so they are cached per blob and space
      -- and reused when the same image arrives again.
      CREATE TABLE blob_vectors (
        blob_hash TEXT NOT NULL REFERENCES blobs (hash),
        space TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (blob_hash, space)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 2,
    name: "maintained active index: entries with status, pages, relation links and pointers",
    // v1 had one routing entry per session; the maintained index replaces it. Scopes that already
    // hold sessions are marked for a rebuild, which replays them through maintenance on first use.
    sql: `
      DROP TABLE entry_pointers;
      DROP TABLE entries;
      CREATE TABLE index_entries (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        scope_key TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('active', 'superseded', 'merged', 'overflow')),
        page INTEGER,
        digest TEXT NOT NULL,
        routing_text TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        space TEXT NOT NULL,
        vector BLOB NOT NULL,
        vector_weight INTEGER NOT NULL,
        image_space TEXT,
        image_vector BLOB,
        image_weight INTEGER NOT NULL,
        sessions TEXT NOT NULL,
        time_start_ms INTEGER NOT NULL,
        time_end_ms INTEGER NOT NULL,
        predecessor TEXT,
        host TEXT,
        last_action TEXT NOT NULL,
        relation TEXT,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
      );
      CREATE INDEX index_entries_by_scope ON index_entries (scope_key, status);
      -- Routing follows links from a chosen entry to the entries it hosts.
      CREATE INDEX index_entries_by_host ON index_entries (scope_key, host);
      CREATE INDEX index_entries_by_predecessor ON index_entries (scope_key, predecessor);
      CREATE TABLE index_pointers (
        entry_rowid INTEGER NOT NULL REFERENCES index_entries (rowid),
        raw_node_rowid INTEGER NOT NULL REFERENCES raw_nodes (rowid),
        ordinal INTEGER NOT NULL,
        PRIMARY KEY (entry_rowid, raw_node_rowid)
      ) WITHOUT ROWID;
      CREATE INDEX index_pointers_by_node ON index_pointers (raw_node_rowid);
      CREATE TABLE index_state (
        scope_key TEXT PRIMARY KEY,
        version INTEGER NOT NULL,
        needs_rebuild INTEGER NOT NULL DEFAULT 0
      ) WITHOUT ROWID;
      INSERT INTO index_state (scope_key, version, needs_rebuild) SELECT DISTINCT scope_key, 0, 1 FROM sessions;
    `,
  },
  {
    version: 3,
    name: "FTS5 secure-delete: a deleted row's terms leave the index segments",
    // Without it a delete only adds a tombstone and the forgotten terms stay in the segment b-trees
    // until a merge happens to rewrite them (issue 18). Needs SQLite 3.42+ to write these tables.
    sql: `
      INSERT INTO fts_text (fts_text, rank) VALUES ('secure-delete', 1);
      INSERT INTO fts_image_text (fts_image_text, rank) VALUES ('secure-delete', 1);
      INSERT INTO fts_text (fts_text) VALUES ('optimize');
      INSERT INTO fts_image_text (fts_image_text) VALUES ('optimize');
    `,
  },
  {
    version: 4,
    name: "per-tenant FTS tables and blob ownership: no tenant's data changes another's scores or costs",
    // BM25 statistics were counted over every tenant's rows, and a blob shared by two tenants made a
    // write or forget of it cheaper and changed forget's counts: side channels between tenants
    // (issue 18). Each tenant now has its own FTS tables (see tenants.ts), blobs are keyed by
    // (tenant, hash), and their files move under a folder per tenant when the store opens.
    sql: `
      CREATE TABLE tenants (token TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE) WITHOUT ROWID;
    `,
    run: (db) => {
      const tenants = db
        .prepare("SELECT DISTINCT substr(scope_key, 1, instr(scope_key, '/') - 1) FROM raw_nodes ORDER BY 1")
        .pluck()
        .all() as string[];
      for (const tenant of tenants) {
        const storage = ensureTenant(db, tenant);
        const [low, high] = tenantKeyRange(tenant);
        for (const [from, to] of [
          ["fts_text", storage.textTable],
          ["fts_image_text", storage.imageTextTable],
        ] as const) {
          db.prepare(
            `INSERT INTO ${to} (rowid, body) SELECT f.rowid, f.body FROM ${from} f JOIN raw_nodes r ON r.rowid = f.rowid
             WHERE r.scope_key >= ? AND r.scope_key < ?`,
          ).run(low, high);
        }
      }
      db.exec(`
        DROP TABLE fts_text;
        DROP TABLE fts_image_text;
        -- No foreign key to blobs any more: a blob row is the tenant's, found through the raw node's scope.
        CREATE TABLE raw_node_images_v4 (
          raw_node_rowid INTEGER NOT NULL REFERENCES raw_nodes (rowid),
          ordinal INTEGER NOT NULL,
          blob_hash TEXT,
          caption TEXT,
          derived_text TEXT,
          origin TEXT,
          PRIMARY KEY (raw_node_rowid, ordinal)
        );
        INSERT INTO raw_node_images_v4 SELECT raw_node_rowid, ordinal, blob_hash, caption, derived_text, origin FROM raw_node_images;
        CREATE TABLE blobs_v4 (
          tenant TEXT NOT NULL REFERENCES tenants (token),
          hash TEXT NOT NULL,
          media_type TEXT NOT NULL,
          bytes INTEGER NOT NULL,
          width INTEGER NOT NULL,
          height INTEGER NOT NULL,
          PRIMARY KEY (tenant, hash)
        ) WITHOUT ROWID;
        INSERT INTO blobs_v4
          SELECT DISTINCT t.token, b.hash, b.media_type, b.bytes, b.width, b.height
          FROM blobs b JOIN raw_node_images i ON i.blob_hash = b.hash JOIN raw_nodes r ON r.rowid = i.raw_node_rowid
          JOIN tenants t ON t.name = substr(r.scope_key, 1, instr(r.scope_key, '/') - 1);
        CREATE TABLE blob_vectors_v4 (
          tenant TEXT NOT NULL,
          blob_hash TEXT NOT NULL,
          space TEXT NOT NULL,
          vector BLOB NOT NULL,
          PRIMARY KEY (tenant, blob_hash, space),
          FOREIGN KEY (tenant, blob_hash) REFERENCES blobs_v4 (tenant, hash)
        ) WITHOUT ROWID;
        INSERT INTO blob_vectors_v4
          SELECT b.tenant, v.blob_hash, v.space, v.vector FROM blob_vectors v JOIN blobs_v4 b ON b.hash = v.blob_hash;
        DROP TABLE raw_node_images;
        DROP TABLE blob_vectors;
        DROP TABLE blobs;
        ALTER TABLE raw_node_images_v4 RENAME TO raw_node_images;
        CREATE INDEX raw_node_images_by_blob ON raw_node_images (blob_hash);
        ALTER TABLE blobs_v4 RENAME TO blobs;
        ALTER TABLE blob_vectors_v4 RENAME TO blob_vectors;
      `);
    },
  },
  {
    version: 5,
    name: "session parts: turns appended to a stored session, each part once",
    // A session grew only by being written whole; appending a turn was a ConflictError. A part
    // records the turns one append added, under the key that makes a retried append a no-op.
    sql: `
      CREATE TABLE session_parts (
        session_rowid INTEGER NOT NULL REFERENCES sessions (rowid),
        part_key TEXT NOT NULL,
        first_turn INTEGER NOT NULL,
        turn_count INTEGER NOT NULL,
        created_ms INTEGER NOT NULL,
        PRIMARY KEY (session_rowid, part_key)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 6,
    name: "question bank: verified retrieval programs (PMMC) and the raw nodes each rests on",
    // A program is retired by the forget that deletes any raw node in bank_evidence, in the same
    // transaction; the program row goes first and its evidence rows follow by cascade.
    sql: `
      CREATE TABLE bank_programs (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        scope_key TEXT NOT NULL,
        question TEXT NOT NULL,
        kind TEXT NOT NULL,
        program TEXT NOT NULL,
        space TEXT,
        vector BLOB,
        image_space TEXT,
        image_vector BLOB,
        sessions TEXT NOT NULL,
        cover_from_ms INTEGER NOT NULL,
        cover_to_ms INTEGER NOT NULL,
        verification TEXT NOT NULL,
        created_ms INTEGER NOT NULL
      );
      CREATE INDEX bank_programs_by_scope ON bank_programs (scope_key, rowid);
      CREATE TABLE bank_evidence (
        program_rowid INTEGER NOT NULL REFERENCES bank_programs (rowid) ON DELETE CASCADE,
        raw_node_rowid INTEGER NOT NULL REFERENCES raw_nodes (rowid),
        ordinal INTEGER NOT NULL,
        PRIMARY KEY (program_rowid, raw_node_rowid)
      ) WITHOUT ROWID;
      CREATE INDEX bank_evidence_by_node ON bank_evidence (raw_node_rowid);
    `,
  },
  {
    version: 7,
    name: "video memory: entities, gallery slots and episodic levels, with the raw nodes each derives from",
    // No foreign keys to raw nodes: a forget deletes the derived items itself (forgetVideoItems),
    // inside its transaction.
    sql: `
      CREATE TABLE video_items (
        scope_key TEXT NOT NULL,
        id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('entity', 'slot', 'observation', 'trace', 'chapter')),
        stream TEXT,
        entity_id TEXT,
        start_ms INTEGER NOT NULL,
        end_ms INTEGER NOT NULL,
        text TEXT NOT NULL,
        data TEXT NOT NULL,
        vector BLOB,
        PRIMARY KEY (scope_key, id)
      ) WITHOUT ROWID;
      CREATE INDEX video_items_by_kind ON video_items (scope_key, kind, start_ms);
      CREATE INDEX video_items_by_entity ON video_items (scope_key, entity_id);
      CREATE TABLE video_sources (
        scope_key TEXT NOT NULL,
        item_id TEXT NOT NULL,
        raw_node_id TEXT NOT NULL,
        PRIMARY KEY (scope_key, item_id, raw_node_id)
      ) WITHOUT ROWID;
      CREATE INDEX video_sources_by_node ON video_sources (scope_key, raw_node_id);
    `,
  },
  {
    version: 8,
    name: "Chinese, Japanese and Korean text indexed as character bigrams, found by any word inside a run",
    // FTS5's unicode61 made a whole unspaced CJK clause one token (issue 16); stored rows are indexed again.
    sql: "",
    run: reindexCjk,
  },
  {
    version: 9,
    name: "a plain copy of every vector space's vectors, for exact scoring of search candidates",
    sql: "",
    // vec0 tables are made per vector space on first use (ensureSpace makes the copy with them from
    // now on); existing ones get their copy here, filled by one sequential pass over vec0.
    run: (db) => {
      const tables = db.prepare("SELECT table_name FROM vector_spaces ORDER BY rowid").pluck().all() as string[];
      for (const table of tables) {
        db.exec(plainTableSql(table));
        db.exec(`INSERT INTO ${plainTableOf(table)} (rowid, embedding) SELECT rowid, embedding FROM ${table}`);
      }
    },
  },
  {
    version: 10,
    name: "video memory part 2: semantic facts, consolidation counters, procedural rules and the notification log",
    // SQLite cannot widen a CHECK in place: the table is rebuilt with the same rows (issue 14).
    sql: `
      CREATE TABLE video_items_next (
        scope_key TEXT NOT NULL,
        id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('entity', 'slot', 'observation', 'trace', 'chapter',
                                           'fact', 'consolidation', 'rule', 'notification')),
        stream TEXT,
        entity_id TEXT,
        start_ms INTEGER NOT NULL,
        end_ms INTEGER NOT NULL,
        text TEXT NOT NULL,
        data TEXT NOT NULL,
        vector BLOB,
        PRIMARY KEY (scope_key, id)
      ) WITHOUT ROWID;
      INSERT INTO video_items_next SELECT * FROM video_items;
      DROP TABLE video_items;
      ALTER TABLE video_items_next RENAME TO video_items;
      CREATE INDEX video_items_by_kind ON video_items (scope_key, kind, start_ms);
      CREATE INDEX video_items_by_entity ON video_items (scope_key, entity_id);
    `,
  },
  {
    version: 11,
    name: "the notifier's record of what each stream recently sent, per rule, kept across restarts",
    // Written with the decisions that change it (commitVideo); goes with its rule and its scope.
    sql: `
      CREATE TABLE video_notifier_state (
        scope_key TEXT NOT NULL,
        stream TEXT NOT NULL,
        rule_id TEXT NOT NULL,
        holding INTEGER NOT NULL,
        last_sent_ms INTEGER,
        event INTEGER NOT NULL,
        sent_in_event INTEGER NOT NULL,
        PRIMARY KEY (scope_key, stream, rule_id)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 12,
    name: "Cairn's own lexical index beside each tenant's FTS5 tables: block-max postings for an exact, bounded BM25 pass",
    // Built from the FTS rows already stored, with FTS5's own tokens (decision 030); FTS5 stays.
    sql: "",
    run: (db) => {
      const tenants = db.prepare("SELECT name FROM tenants ORDER BY token").pluck().all() as string[];
      for (const name of tenants) rebuildLexicalIndex(db, tenantStorage(name));
    },
  },
  {
    version: 13,
    name: "A forget's erasure is pending until a scan of the file or a VACUUM settles it (decision 038)",
    // A store that has forgotten anything may hold old copies of forgotten rows in pages SQLite
    // rebuilt (earlier Cairn did not look): its first open under this version vacuums once.
    sql: `
      CREATE TABLE erasure_pending (id INTEGER PRIMARY KEY CHECK (id = 1), since_ms INTEGER NOT NULL);
      INSERT INTO erasure_pending (id, since_ms)
        SELECT 1, 0 WHERE EXISTS (SELECT 1 FROM audit_events WHERE action = 'forget');
    `,
  },
  {
    version: 14,
    name: "An image's uses by hash, those with derived text first, so a known image is found in one step",
    // `knownImages` asks for a scope's use of a hash with derived text if there is one: over the
    // plain hash index SQLite read and sorted every use of the hash in the store (an image used a
    // thousand times cost a thousand row reads per write that carries it). This index is in that
    // order, and still answers every lookup by hash alone.
    sql: `
      CREATE INDEX raw_node_images_by_blob_text ON raw_node_images (blob_hash, derived_text IS NULL);
      DROP INDEX raw_node_images_by_blob;
    `,
  },
];

/** Every schema version this Cairn knows, ascending. */
export const knownSchemaVersions: readonly number[] = migrations.map((migration) => migration.version);

/** Applies every migration not yet applied, up to `upTo` (the latest by default); returns the latest known. */
export function migrate(db: Database, now: () => number, upTo = Number.POSITIVE_INFINITY): number {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_ms INTEGER NOT NULL)",
  );
  const applied = new Set(
    (db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((row) => row.version),
  );
  const latest = migrations.at(-1)?.version ?? 0;
  const newest = Math.max(0, ...applied);
  if (newest > latest) {
    throw new Error(`store schema version ${newest} is newer than this Cairn (knows up to ${latest}); upgrade Cairn`);
  }
  const appliedNow = db.prepare("SELECT 1 FROM schema_migrations WHERE version = ?").pluck();
  for (const migration of migrations) {
    if (applied.has(migration.version) || migration.version > upTo) continue;
    // IMMEDIATE takes the write lock first, and the version is checked again under it: two processes
    // opening a new store at once both saw it missing, and the second failed on "table … already exists".
    db.transaction(() => {
      if (appliedNow.get(migration.version)) return;
      db.exec(migration.sql);
      migration.run?.(db);
      db.prepare("INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?, ?, ?)").run(
        migration.version,
        migration.name,
        now(),
      );
    }).immediate();
  }
  return latest;
}
