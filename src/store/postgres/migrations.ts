import type pg from "pg";
import {
  addPostingsStatement,
  blockTriggerFunctions,
  dropPostingsStatement,
  fixedBlockFunctions,
  lexicalBlockSize,
  recodeBlocksStatement,
  varintBlockFunctions,
} from "./lexical-blocks.ts";
import { reindexCjkDocuments } from "./lexical-documents-before-11.ts";
import { documentsCutAgain } from "./lexical-retokenize.ts";
import { forEachTenant, type Sql } from "./tenant-transaction.ts";

/**
 * Versioned schema, like the SQLite store's: a migration runs once, inside a transaction, and is
 * never edited after release (add a new one). An advisory lock makes concurrent opens (several
 * `cairn serve` instances starting at once) take turns. Vector tables are not here: one table per
 * vector space is created on first use (see `vector_spaces` and `vector-spaces.ts`).
 *
 * Every table holding a tenant's data carries a `tenant` column and a row-level security policy
 * comparing it with the transaction's `cairn.tenant` setting, FORCEd so it binds the tables' owner
 * too (see `tenant-transaction.ts`). Only `schema_migrations`, `vector_spaces` (model and table
 * names, no tenant data) and `api_keys` (verified before a tenant is known; key hashes only) have none.
 */

/**
 * Migration 11's row trigger: deleting a document deletes its postings (`lexical_postings`, until
 * migration 12 put them in blocks). Exported for the tests that put a database back in that shape.
 */
export const rowPostingsTrigger = `CREATE FUNCTION lexical_docs_drop_postings() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM lexical_postings p
        WHERE p.scope_key = OLD.scope_key AND p.field = OLD.field AND p.lexeme = ANY (OLD.terms)
          AND p.raw_node_rowid = OLD.raw_node_rowid;
        RETURN NULL;
      END $$;
      CREATE TRIGGER lexical_docs_drop_postings AFTER DELETE ON lexical_docs
        FOR EACH ROW EXECUTE FUNCTION lexical_docs_drop_postings();`;

/** The policy every tenant table gets; `tenant_wall()` reads the setting (NULL when unset: no row matches). */
const firstTenantTables = [
  "scopes",
  "sessions",
  "raw_nodes",
  "blobs",
  "raw_node_images",
  "blob_vectors",
  "lexical_docs",
  "lexical_postings",
  "lexical_terms",
  "lexical_stats",
  "index_entries",
  "index_pointers",
  "index_state",
  "audit_events",
  "audit_keys",
] as const;

/** Tables added after the first schema, each walled by the migration that creates it. */
const bankTables = ["bank_programs", "bank_evidence"] as const;

/** The lexical postings' blocks (migration 12), which replaced `lexical_postings`. */
const blockTables = ["lexical_blocks"] as const;

/** Every tenant table of the current schema. */
export const tenantTables = [
  ...firstTenantTables.filter((table) => table !== "lexical_postings"),
  ...bankTables,
  ...blockTables,
] as const;

const wall = (table: string) => `
  ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY;
  ALTER TABLE ${table} FORCE ROW LEVEL SECURITY;
  CREATE POLICY tenant_wall ON ${table}
    USING (tenant = current_setting('cairn.tenant', true))
    WITH CHECK (tenant = current_setting('cairn.tenant', true));`;

/** Tenant tables added after migration 1, each walled by the migration that creates it. */
export const videoTenantTables = ["video_items", "video_sources"] as const;

/** The notifier's record (issue 14), walled by migration 9. */
const notifierTables = ["video_notifier_state"] as const;

const migrations: readonly {
  version: number;
  name: string;
  sql: string;
  run?: (sql: Sql) => Promise<void>;
}[] = [
  {
    version: 1,
    name: "cold store, tenant-owned blobs, lexical documents, active index, audit, row-level security",
    sql: `
      CREATE EXTENSION IF NOT EXISTS vector;

      -- The administrative listing of scopes (listScopes): readable per tenant like every other
      -- table, and across tenants only by a transaction that sets cairn.list_scopes.
      CREATE TABLE scopes (
        scope_key text PRIMARY KEY,
        tenant text NOT NULL
      );

      CREATE TABLE sessions (
        rowid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL UNIQUE,
        tenant text NOT NULL,
        scope_key text NOT NULL,
        session_key text NOT NULL,
        time_ms bigint NOT NULL,
        source text,
        content_hash text NOT NULL,
        turn_count integer NOT NULL,
        image_count integer NOT NULL,
        created_ms bigint NOT NULL,
        UNIQUE (scope_key, session_key)
      );
      CREATE INDEX sessions_by_time ON sessions (scope_key, time_ms, rowid);

      CREATE TABLE raw_nodes (
        rowid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL UNIQUE,
        tenant text NOT NULL,
        scope_key text NOT NULL,
        session_rowid bigint NOT NULL REFERENCES sessions (rowid),
        turn integer NOT NULL,
        speaker text,
        role text,
        text text NOT NULL,
        time_ms bigint NOT NULL,
        source text,
        uri text,
        metadata text NOT NULL
      );
      CREATE INDEX raw_nodes_by_session ON raw_nodes (session_rowid, turn);
      CREATE INDEX raw_nodes_by_scope_time ON raw_nodes (scope_key, time_ms);

      -- Blobs belong to a tenant: deduplicated within it (tenant, hash), never shared across tenants.
      CREATE TABLE blobs (
        tenant text NOT NULL,
        hash text NOT NULL,
        media_type text NOT NULL,
        bytes integer NOT NULL,
        width integer NOT NULL,
        height integer NOT NULL,
        data bytea NOT NULL,
        thumbnail bytea NOT NULL,
        PRIMARY KEY (tenant, hash)
      );

      CREATE TABLE raw_node_images (
        raw_node_rowid bigint NOT NULL REFERENCES raw_nodes (rowid) ON DELETE CASCADE,
        ordinal integer NOT NULL,
        tenant text NOT NULL,
        scope_key text NOT NULL,
        -- NULL for a caption-only image: one the source referenced but whose pixels were never available.
        blob_hash text,
        caption text,
        derived_text text,
        origin text,
        PRIMARY KEY (raw_node_rowid, ordinal),
        FOREIGN KEY (tenant, blob_hash) REFERENCES blobs (tenant, hash)
      );
      CREATE INDEX raw_node_images_by_blob ON raw_node_images (tenant, blob_hash, scope_key);

      -- Image vectors depend only on the pixels: cached per blob and space, reused when it arrives again.
      CREATE TABLE blob_vectors (
        tenant text NOT NULL,
        blob_hash text NOT NULL,
        space text NOT NULL,
        vector bytea NOT NULL,
        PRIMARY KEY (tenant, blob_hash, space),
        FOREIGN KEY (tenant, blob_hash) REFERENCES blobs (tenant, hash) ON DELETE CASCADE
      );

      -- The lexical channel as an inverted index: one document per raw node and field ('text',
      -- 'imageText') with its length in terms, and one posting per term of a document with its
      -- frequency (and the document's length, so scoring reads postings only). Terms came from the
      -- 'english' text search configuration until migration 13 (lexical-terms.ts).
      CREATE TABLE lexical_docs (
        raw_node_rowid bigint NOT NULL REFERENCES raw_nodes (rowid) ON DELETE CASCADE,
        field text NOT NULL CHECK (field IN ('text', 'imageText')),
        tenant text NOT NULL,
        scope_key text NOT NULL,
        length integer NOT NULL,
        PRIMARY KEY (raw_node_rowid, field)
      );
      CREATE TABLE lexical_postings (
        scope_key text NOT NULL,
        field text NOT NULL,
        lexeme text NOT NULL,
        raw_node_rowid bigint NOT NULL REFERENCES raw_nodes (rowid) ON DELETE CASCADE,
        tenant text NOT NULL,
        tf integer NOT NULL,
        length integer NOT NULL,
        PRIMARY KEY (scope_key, field, lexeme, raw_node_rowid)
      );
      CREATE INDEX lexical_postings_by_node ON lexical_postings (raw_node_rowid);

      -- BM25's statistics, per tenant and field, kept with the documents by commit and forget:
      -- how many documents hold each term, how many documents there are and their total length.
      -- A term no document holds any more has no row (a forgotten word leaves nothing here).
      CREATE TABLE lexical_terms (
        tenant text NOT NULL,
        field text NOT NULL,
        lexeme text NOT NULL,
        df integer NOT NULL CHECK (df > 0),
        PRIMARY KEY (tenant, field, lexeme)
      );
      CREATE TABLE lexical_stats (
        tenant text NOT NULL,
        field text NOT NULL,
        docs bigint NOT NULL,
        total_length bigint NOT NULL,
        PRIMARY KEY (tenant, field)
      );

      CREATE TABLE index_entries (
        rowid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL,
        tenant text NOT NULL,
        scope_key text NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'superseded', 'merged', 'overflow')),
        page integer,
        digest text NOT NULL,
        routing_text text NOT NULL,
        tokens integer NOT NULL,
        space text NOT NULL,
        vector vector NOT NULL,
        vector_weight integer NOT NULL,
        image_space text,
        image_vector vector,
        image_weight integer NOT NULL,
        sessions text NOT NULL,
        time_start_ms bigint NOT NULL,
        time_end_ms bigint NOT NULL,
        predecessor text,
        host text,
        last_action text NOT NULL,
        relation text,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL,
        UNIQUE (scope_key, id)
      );
      CREATE INDEX index_entries_by_scope ON index_entries (scope_key, status);
      CREATE INDEX index_entries_by_host ON index_entries (scope_key, host);

      -- No cascade from raw nodes: a forget must unlink every pointer to what it deletes first.
      CREATE TABLE index_pointers (
        entry_rowid bigint NOT NULL REFERENCES index_entries (rowid) ON DELETE CASCADE,
        raw_node_rowid bigint NOT NULL REFERENCES raw_nodes (rowid),
        tenant text NOT NULL,
        ordinal integer NOT NULL,
        PRIMARY KEY (entry_rowid, raw_node_rowid)
      );
      CREATE INDEX index_pointers_by_node ON index_pointers (raw_node_rowid);

      CREATE TABLE index_state (
        scope_key text PRIMARY KEY,
        tenant text NOT NULL,
        version bigint NOT NULL,
        needs_rebuild boolean NOT NULL DEFAULT false
      );

      CREATE TABLE audit_events (
        rowid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL UNIQUE,
        tenant text NOT NULL,
        scope_key text NOT NULL,
        time_ms bigint NOT NULL,
        action text NOT NULL,
        subject text NOT NULL,
        details text NOT NULL
      );
      CREATE INDEX audit_by_scope ON audit_events (scope_key, rowid);

      -- The secret under which a forget keeps forgotten keys as keyed hashes: one per tenant.
      CREATE TABLE audit_keys (
        tenant text PRIMARY KEY,
        secret bytea NOT NULL
      );

      CREATE TABLE vector_spaces (
        name text PRIMARY KEY,
        kind text NOT NULL CHECK (kind IN ('text', 'image')),
        dimensions integer NOT NULL,
        table_name text NOT NULL UNIQUE
      );

      ${firstTenantTables.map(wall).join("\n")}
      CREATE POLICY list_scopes ON scopes FOR SELECT USING (current_setting('cairn.list_scopes', true) = 'on');
    `,
  },
  {
    version: 2,
    name: "API keys for cairn serve, shared by every instance on the database",
    // No tenant wall: a key is verified before its tenant is known. Rows hold the SHA-256 of each
    // key, never the key (src/auth/postgres-key-store.ts).
    sql: `
      CREATE TABLE api_keys (
        id text PRIMARY KEY,
        tenant text NOT NULL,
        "user" text,
        hash bytea NOT NULL,
        created_at bigint NOT NULL,
        revoked_at bigint
      );
    `,
  },
  {
    version: 3,
    name: "session parts: turns appended to a stored session, each part once",
    // As SQLite's migration 5: a part records the turns one append added, under the key that makes
    // a retried append a no-op. Behind the tenant wall like every table holding tenant data.
    sql: `
      CREATE TABLE session_parts (
        session_rowid bigint NOT NULL REFERENCES sessions (rowid),
        tenant text NOT NULL,
        part_key text NOT NULL,
        first_turn integer NOT NULL,
        turn_count integer NOT NULL,
        created_ms bigint NOT NULL,
        PRIMARY KEY (session_rowid, part_key)
      );
      ${wall("session_parts")}
    `,
  },
  {
    version: 4,
    name: "question bank: verified retrieval programs (PMMC) and the raw nodes each rests on",
    // A forget deletes the programs resting on its raw nodes before the raw nodes (no cascade from
    // raw_nodes: a forget must retire them on purpose); evidence rows follow their program.
    sql: `
      CREATE TABLE bank_programs (
        rowid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL,
        tenant text NOT NULL,
        scope_key text NOT NULL,
        question text NOT NULL,
        kind text NOT NULL,
        program text NOT NULL,
        space text,
        vector bytea,
        image_space text,
        image_vector bytea,
        sessions text NOT NULL,
        cover_from_ms bigint NOT NULL,
        cover_to_ms bigint NOT NULL,
        verification text NOT NULL,
        created_ms bigint NOT NULL,
        UNIQUE (scope_key, id)
      );
      CREATE INDEX bank_programs_by_scope ON bank_programs (scope_key, rowid);
      CREATE TABLE bank_evidence (
        program_rowid bigint NOT NULL REFERENCES bank_programs (rowid) ON DELETE CASCADE,
        raw_node_rowid bigint NOT NULL REFERENCES raw_nodes (rowid),
        tenant text NOT NULL,
        ordinal integer NOT NULL,
        PRIMARY KEY (program_rowid, raw_node_rowid)
      );
      CREATE INDEX bank_evidence_by_node ON bank_evidence (raw_node_rowid);
      ${bankTables.map(wall).join("\n")}
    `,
  },
  {
    version: 5,
    name: "video memory: entities, gallery slots and episodic levels, with the raw nodes each derives from",
    // Sources have no foreign key: a forget deletes derived items itself.
    sql: `
      CREATE TABLE video_items (
        tenant text NOT NULL,
        scope_key text NOT NULL,
        id text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('entity', 'slot', 'observation', 'trace', 'chapter')),
        stream text,
        entity_id text,
        start_ms bigint NOT NULL,
        end_ms bigint NOT NULL,
        text text NOT NULL,
        data text NOT NULL,
        vector bytea,
        PRIMARY KEY (scope_key, id)
      );
      CREATE INDEX video_items_by_kind ON video_items (scope_key, kind, start_ms);
      CREATE INDEX video_items_by_entity ON video_items (scope_key, entity_id);
      CREATE TABLE video_sources (
        tenant text NOT NULL,
        scope_key text NOT NULL,
        item_id text NOT NULL,
        raw_node_id text NOT NULL,
        PRIMARY KEY (scope_key, item_id, raw_node_id),
        FOREIGN KEY (scope_key, item_id) REFERENCES video_items (scope_key, id) ON DELETE CASCADE
      );
      CREATE INDEX video_sources_by_node ON video_sources (scope_key, raw_node_id);
      ${videoTenantTables.map(wall).join("\n")}
    `,
  },
  {
    version: 6,
    name: "Chinese, Japanese and Korean text indexed as character bigrams, found by any word inside a run",
    // The default parser made a whole unspaced CJK clause one lexeme (issue 16); stored documents are indexed again.
    sql: "SELECT 1",
    run: reindexCjkDocuments,
  },
  {
    version: 7,
    name: "video memory part 2: semantic facts, consolidation counters, procedural rules and the notification log",
    sql: `
      ALTER TABLE video_items DROP CONSTRAINT video_items_kind_check;
      ALTER TABLE video_items ADD CONSTRAINT video_items_kind_check CHECK (kind IN ('entity', 'slot', 'observation',
        'trace', 'chapter', 'fact', 'consolidation', 'rule', 'notification'));
    `,
  },
  {
    version: 8,
    name: "BM25 postings readable by index-only scans: the primary key carries tf, length and tenant",
    // A search reads every posting of each query term in the scope; with these columns in the index
    // (and the tenant wall's column among them) it no longer visits the heap for each one.
    sql: `
      ALTER TABLE lexical_postings DROP CONSTRAINT lexical_postings_pkey,
        ADD CONSTRAINT lexical_postings_pkey PRIMARY KEY (scope_key, field, lexeme, raw_node_rowid)
          INCLUDE (tf, length, tenant);
    `,
  },
  {
    version: 9,
    name: "the notifier's record of what each stream recently sent, per rule, kept across restarts",
    // Written with the decisions that change it (commitVideo); goes with its rule and its scope.
    sql: `
      CREATE TABLE video_notifier_state (
        tenant text NOT NULL,
        scope_key text NOT NULL,
        stream text NOT NULL,
        rule_id text NOT NULL,
        holding boolean NOT NULL,
        last_sent_ms bigint,
        event integer NOT NULL,
        sent_in_event integer NOT NULL,
        PRIMARY KEY (scope_key, stream, rule_id)
      );
      ${notifierTables.map(wall).join("\n")}
    `,
  },
  {
    version: 10,
    name: "vectors without pgvector's HNSW: each row numbered in commit order per scope, each scope's vectors generation-stamped",
    // Decision 025: the approximate index lives in each Cairn process (usearch), caught up by `seq`,
    // which writers draw under their scope's lock, so within a scope it grows in commit order. A
    // forget or vector replacement gives the scope a new `vector_generation`: every process then
    // drops its copy of that scope's index, and with it the forgotten vectors.
    sql: "CREATE SEQUENCE IF NOT EXISTS vector_seq",
    run: async (sql) => {
      await sql.query(
        "ALTER TABLE index_state ADD COLUMN vector_generation bigint NOT NULL DEFAULT nextval('vector_seq')",
      );
      const spaces = await sql.query<{ table_name: string }>("SELECT table_name FROM vector_spaces");
      for (const { table_name: table } of spaces) await sql.query(vectorTableToSeq(table));
    },
  },
  {
    version: 11,
    name: "lexical documents carry their terms; postings lose their foreign key and raw-node index, and go with their document; lexical keys compare bytes",
    // Decision 031: of an ingest's server time the postings were most, and of theirs a foreign-key
    // check and a second index entry per posting. A document row now holds its terms and their
    // frequencies (the statistics are counted from them), and deleting it deletes exactly its
    // postings by their primary key: the cascade from raw_nodes to lexical_docs still reaches them.
    // The keys' text columns compare bytes ("C"): lexemes and scope keys need equality and a stable
    // order, not a language's, and each posting's and term's index descent compares them many times.
    // A "C" column meeting a default-collation value compares in "C", so queries are unchanged;
    // the tenant keeps its collation (the row-level policies name it, and it cannot change under them).
    sql: `
      ALTER TABLE lexical_docs ADD COLUMN terms text[] COLLATE "C" NOT NULL DEFAULT '{}',
        ADD COLUMN tfs integer[] NOT NULL DEFAULT '{}';
      ALTER TABLE lexical_postings DROP CONSTRAINT lexical_postings_raw_node_rowid_fkey,
        ALTER COLUMN scope_key TYPE text COLLATE "C", ALTER COLUMN field TYPE text COLLATE "C",
        ALTER COLUMN lexeme TYPE text COLLATE "C";
      ALTER TABLE lexical_terms ALTER COLUMN field TYPE text COLLATE "C", ALTER COLUMN lexeme TYPE text COLLATE "C";
      DROP INDEX lexical_postings_by_node;
      ${rowPostingsTrigger}
    `,
    run: termsOntoDocuments,
  },
  {
    version: 12,
    name: "lexical postings packed in blocks of at most 128 per scope, field and term, with each block's largest tf and smallest length",
    // Decision 034: a search reads its terms' blocks in one round trip and walks them by block-max
    // MaxScore in the process, instead of aggregating every posting of every query term in SQL.
    // Statement-level triggers on lexical_docs keep the blocks in step with the documents: an
    // insert appends to each list's last block (or starts blocks), a delete rewrites the blocks
    // that held the documents, so every path that writes or deletes documents (commits, forgets,
    // survivors' re-derivation, cascades from raw_nodes) keeps them exact.
    sql: `
      CREATE TABLE lexical_blocks (
        scope_key text COLLATE "C" NOT NULL,
        field text COLLATE "C" NOT NULL,
        lexeme text COLLATE "C" NOT NULL,
        block_start bigint NOT NULL,
        tenant text NOT NULL,
        last_rowid bigint NOT NULL,
        n integer NOT NULL CHECK (n BETWEEN 1 AND ${lexicalBlockSize}),
        max_tf integer NOT NULL,
        min_length integer NOT NULL,
        postings bytea NOT NULL,
        PRIMARY KEY (scope_key, field, lexeme, block_start)
      ) WITH (fillfactor = 50, toast_tuple_target = 8160);
      ALTER TABLE lexical_blocks ALTER COLUMN postings SET STORAGE EXTERNAL;
      ${blockTables.map(wall).join("\n")}
      ${fixedBlockFunctions}
      DROP TRIGGER lexical_docs_drop_postings ON lexical_docs;
      DROP FUNCTION lexical_docs_drop_postings();
      CREATE FUNCTION lexical_docs_drop_postings() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        ${dropPostingsStatement("fixed")}
        RETURN NULL;
      END $$;
      CREATE FUNCTION lexical_docs_add_postings() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        ${addPostingsStatement("fixed")}
        RETURN NULL;
      END $$;
      CREATE TRIGGER lexical_docs_add_postings AFTER INSERT ON lexical_docs
        REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION lexical_docs_add_postings();
      CREATE TRIGGER lexical_docs_drop_postings AFTER DELETE ON lexical_docs
        REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION lexical_docs_drop_postings();
    `,
    run: postingsIntoBlocks,
  },
  {
    version: 13,
    name: "lexical terms cut by FTS5's tokenizer, as the SQLite store cuts them, in place of the english configuration's",
    // Decision 037: the two stores held different terms for the same text (Snowball against Porter,
    // stop words dropped against kept), so BM25 ranked differently and evidence recall differed by up
    // to 2 points. Every document is made again from its raw node and cut in the process.
    sql: "SELECT 1",
    run: documentsCutAgain,
  },
  {
    version: 14,
    name: "lexical blocks' postings as varints (rowid delta, tf, length) in place of 16 bytes each",
    // Decision 039: a search fetches every block of its terms, and the bytes fetched were most of
    // the BM25 pass's cost on Postgres; varints make them 5.3× fewer. Every block is written again
    // in place (its row, key and bounds stay), read by migration 12's decoder under another name.
    sql: `
      ALTER FUNCTION lexical_block_postings(bytea) RENAME TO lexical_block_postings_fixed;
      DROP FUNCTION lexical_posting(bigint, integer, integer);
      ${varintBlockFunctions}
      ${blockTriggerFunctions("varint")}
    `,
    run: postingsAsVarints,
  },
];

/** Migration 14: every tenant's blocks written again as varints, inside its wall; then the old decoder goes. */
async function postingsAsVarints(sql: Sql): Promise<void> {
  await forEachTenant(sql, async () => {
    await sql.query(recodeBlocksStatement);
  });
  await sql.query("DROP FUNCTION lexical_block_postings_fixed(bytea)");
}

/**
 * Migration 12: every tenant's postings become blocks, inside its wall, then the old table goes.
 * The blocks are cut from each list's postings in rowid order, 128 at a time.
 */
async function postingsIntoBlocks(sql: Sql): Promise<void> {
  await forEachTenant(sql, async () => {
    await sql.query(
      `INSERT INTO lexical_blocks (scope_key, field, lexeme, block_start, tenant, last_rowid, n, max_tf, min_length, postings)
       SELECT scope_key, field, lexeme, min(raw_node_rowid), min(tenant), max(raw_node_rowid), count(*), max(tf),
         min(length), string_agg(lexical_posting(raw_node_rowid, tf, length), ''::bytea ORDER BY raw_node_rowid)
       FROM (SELECT p.*, (row_number() OVER (PARTITION BY scope_key, field, lexeme ORDER BY raw_node_rowid) - 1)
               / ${lexicalBlockSize} AS piece
             FROM lexical_postings p) p
       GROUP BY scope_key, field, lexeme, piece`,
    );
  });
  await sql.query("DROP TABLE lexical_postings");
}

/**
 * Migration 11: every stored document gets its terms and frequencies from its postings, tenant by
 * tenant inside its wall (the tables' policies bind the migration's role too).
 */
async function termsOntoDocuments(sql: Sql): Promise<void> {
  await forEachTenant(sql, async () => {
    await sql.query(
      `UPDATE lexical_docs d SET terms = p.terms, tfs = p.tfs
       FROM (SELECT raw_node_rowid, field, array_agg(lexeme ORDER BY lexeme) AS terms,
               array_agg(tf ORDER BY lexeme) AS tfs
             FROM lexical_postings GROUP BY raw_node_rowid, field) p
       WHERE d.raw_node_rowid = p.raw_node_rowid AND d.field = p.field`,
    );
  });
}

/**
 * A vector table of schema < 11 in its current shape: numbered rows, read by (scope, seq), and no
 * HNSW index (its graph maintenance was 58% of an ingest). A volatile default rewrites the table,
 * numbering every existing row whatever its tenant (an UPDATE would meet the tenant wall); they are
 * all committed, so any order will do.
 */
function vectorTableToSeq(table: string): string {
  return `
    ALTER TABLE ${table} ADD COLUMN seq bigint NOT NULL DEFAULT nextval('vector_seq');
    CREATE UNIQUE INDEX ${table}_by_scope_seq ON ${table} (scope_key, seq);
    DROP INDEX IF EXISTS ${table}_by_scope;
    DROP INDEX IF EXISTS ${table}_hnsw;`;
}

export const latestSchemaVersion = migrations.at(-1)?.version ?? 0;

/** Applies the migrations this database lacks; refuses a database from a newer Cairn. Returns the version. */
export async function migrate(client: pg.ClientBase, now: () => number): Promise<number> {
  await client.query("BEGIN");
  try {
    // Held to the end of this transaction: a second opener waits, then finds everything applied.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('cairn.schema_migrations'))");
    await client.query(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_ms bigint NOT NULL)",
    );
    const applied = new Set(
      (await client.query<{ version: number }>("SELECT version FROM schema_migrations")).rows.map((row) => row.version),
    );
    const newest = Math.max(0, ...applied);
    if (newest > latestSchemaVersion) {
      throw new Error(
        `store schema version ${newest} is newer than this Cairn (knows up to ${latestSchemaVersion}); upgrade Cairn`,
      );
    }
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      await client.query(migration.sql);
      await migration.run?.({ query: async (text, values) => (await client.query(text, values as unknown[])).rows });
      await client.query("INSERT INTO schema_migrations (version, name, applied_ms) VALUES ($1, $2, $3)", [
        migration.version,
        migration.name,
        now(),
      ]);
    }
    await client.query("COMMIT");
    return latestSchemaVersion;
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  }
}
