import { createHash } from "node:crypto";
import type { Statement } from "better-sqlite3";
import { ConflictError, NotFoundError, StoreError } from "../../core/errors.ts";
import type { Ranked } from "../../core/ranked.ts";
import type { Scope } from "../../core/scope.ts";
import { vectorBytes, vectorFromBytes } from "../../core/vectors.ts";
import { type IndexEntry, type IndexState, IndexVersionConflict, type MaintenancePlan } from "../index-records.ts";
import type {
  AuditEvent,
  BlobRecord,
  CommitResult,
  Entry,
  ForgetResult,
  ForgetTarget,
  ImageRef,
  RawNode,
  ScopeStats,
  SearchFilters,
  SessionRecord,
  SessionWrite,
} from "../records.ts";
import type { LexicalField, ScopedStore } from "../store.ts";
import { toMatchExpression } from "./fts-query.ts";
import {
  applyPlan,
  forgetFromIndex,
  forgetWholeIndex,
  indexVersion,
  readIndex,
  readLinked,
  toPublicEntry,
} from "./index-rows.ts";
import type { SqliteStore } from "./sqlite-store.ts";
import type { Neighbour } from "./vector-index.ts";
import { imageSlots, type VectorRow } from "./vector-rows.ts";

interface SessionRow {
  rowid: number;
  id: string;
  session_key: string;
  time_ms: number;
  source: string | null;
  content_hash: string;
  turn_count: number;
  image_count: number;
  created_ms: number;
}

interface RawNodeRow {
  rowid: number;
  id: string;
  session_rowid: number;
  session_id: string;
  session_key: string;
  turn: number;
  speaker: string | null;
  role: string | null;
  text: string;
  time_ms: number;
  source: string | null;
  uri: string | null;
  metadata: string;
}

interface ImageRow {
  raw_node_rowid: number;
  ordinal: number;
  blob_hash: string | null;
  caption: string | null;
  derived_text: string | null;
  origin: string | null;
  media_type: string | null;
  bytes: number | null;
  width: number | null;
  height: number | null;
}

const rawNodeColumns = `r.rowid, r.id, r.session_rowid, s.id AS session_id, s.session_key, r.turn, r.speaker, r.role, r.text,
  r.time_ms, r.source, r.uri, r.metadata`;

/** Every statement below carries `scope_key = ?` bound to this instance's scope. */
export class SqliteScopedStore implements ScopedStore {
  readonly scope: Scope;
  readonly #store: SqliteStore;
  readonly #key: string;
  /** FTS token standing for the scope, so lexical search is scoped inside the MATCH itself. */
  readonly #scopeToken: string;

  constructor(store: SqliteStore, scope: Scope, key: string) {
    this.#store = store;
    this.scope = scope;
    this.#key = key;
    this.#scopeToken = `s${createHash("sha256").update(key).digest("hex").slice(0, 24)}`;
  }

  get #db() {
    return this.#store.db;
  }

  async commitSession(write: SessionWrite): Promise<CommitResult> {
    const files = this.#store.files;
    const newBlobs = write.blobs.filter((blob) => !this.#store.hasBlob(blob.hash));
    const journal = files.begin(newBlobs.map((blob) => blob.hash));
    try {
      for (const blob of newBlobs) files.put(blob.hash, blob.data, blob.thumbnail);
      const vectors: VectorRow[] = [];
      // IMMEDIATE takes the write lock first, so the key check and the insert see the same state even
      // with concurrent writers; creating a new vector space inside it keeps a failed commit from
      // leaving an empty table behind.
      const result = this.#db
        .transaction(() => {
          const existing = this.#sessionRowByKey(write.key);
          if (existing) return this.#duplicate(toSession(existing), write);
          const tables = write.spaces.map((space) => ({ space, table: this.#store.ensureSpace(space) }));
          return this.#insertSession(write, tables, vectors);
        })
        .immediate();
      this.#store.vectorIndexes.afterCommit(this.#key, vectors);
      return result;
    } catch (error) {
      if (error instanceof ConflictError || error instanceof IndexVersionConflict) throw error;
      throw new StoreError("commitSession", error);
    } finally {
      files.settle(journal, (hash) => this.#store.hasBlob(hash));
    }
  }

  #duplicate(existing: SessionRecord, write: SessionWrite): CommitResult {
    if (existing.contentHash !== write.contentHash) {
      throw new ConflictError(`session ${write.key} already exists in this scope with different content`);
    }
    const nodes = this.#db
      .prepare(
        "SELECT r.id FROM raw_nodes r JOIN sessions s ON s.rowid = r.session_rowid WHERE s.id = ? ORDER BY r.turn",
      )
      .all(existing.id) as { id: string }[];
    return { session: existing, rawNodeIds: nodes.map((node) => node.id), entryIds: [], duplicate: true };
  }

  #sessionRowByKey(key: string): SessionRow | undefined {
    return this.#db.prepare("SELECT * FROM sessions WHERE scope_key = ? AND session_key = ?").get(this.#key, key) as
      | SessionRow
      | undefined;
  }

  /** `vectors` collects the vec0 rows written, for the ANN indexes once the transaction has committed. */
  #insertSession(
    write: SessionWrite,
    tables: { space: { name: string; kind: string }; table: string }[],
    vectors: VectorRow[],
  ): CommitResult {
    const db = this.#db;
    const now = this.#store.now();
    const sessionId = this.#store.newId("ses");
    const imageCount = write.rawNodes.reduce((sum, node) => sum + node.images.length, 0);
    const sessionRowid = Number(
      db
        .prepare(
          `INSERT INTO sessions (id, scope_key, session_key, time_ms, source, content_hash, turn_count, image_count, created_ms)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          sessionId,
          this.#key,
          write.key,
          write.timeMs,
          write.source,
          write.contentHash,
          write.rawNodes.length,
          imageCount,
          now,
        ).lastInsertRowid,
    );
    const insertBlob = db.prepare(
      "INSERT OR IGNORE INTO blobs (hash, media_type, bytes, width, height) VALUES (?, ?, ?, ?, ?)",
    );
    for (const blob of write.blobs) insertBlob.run(blob.hash, blob.mediaType, blob.bytes, blob.width, blob.height);

    const insertNode = db.prepare(
      `INSERT INTO raw_nodes (id, scope_key, session_rowid, turn, speaker, role, text, time_ms, source, uri, metadata)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insertImage = db.prepare(
      "INSERT INTO raw_node_images (raw_node_rowid, ordinal, blob_hash, caption, derived_text, origin) VALUES (?, ?, ?, ?, ?, ?)",
    );
    const insertText = db.prepare("INSERT INTO fts_text (rowid, body) VALUES (?, ?)");
    const insertImageText = db.prepare("INSERT INTO fts_image_text (rowid, body) VALUES (?, ?)");
    const insertVector = new Map(
      tables.map(({ space, table }) => [
        space.name,
        db.prepare(
          `INSERT INTO ${table} (rowid, scope_key, session_rowid, time_ms, speaker, embedding) VALUES (?, ?, ?, ?, ?, ?)`,
        ),
      ]),
    );
    const cacheVector = db.prepare("INSERT OR IGNORE INTO blob_vectors (blob_hash, space, vector) VALUES (?, ?, ?)");
    const tableOf = new Map(tables.map(({ space, table }) => [space.name, table]));
    const insertVectorRow = (space: string, rowid: number, vector: Float32Array, meta: readonly unknown[]) => {
      this.#vectorStatement(insertVector, space).run(BigInt(rowid), ...meta, vector);
      vectors.push({ table: tableOf.get(space) ?? "", rowid, vector });
    };

    const rawNodeIds: string[] = [];
    const rowids: number[] = [];
    for (const node of write.rawNodes) {
      const id = this.#store.newId("rn");
      const rowid = Number(
        insertNode.run(
          id,
          this.#key,
          sessionRowid,
          node.turn,
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
      insertText.run(BigInt(rowid), `${this.#scopeToken} ${node.text}`);
      const imageText = node.images
        .map((image) => [image.caption, image.derivedText].filter(Boolean).join(" "))
        .join(" ");
      if (imageText.trim()) insertImageText.run(BigInt(rowid), `${this.#scopeToken} ${imageText}`);
      const meta = [this.#key, BigInt(sessionRowid), BigInt(node.timeMs), node.speaker ?? ""] as const;
      for (const [space, vector] of Object.entries(node.textVectors)) insertVectorRow(space, rowid, vector, meta);
      node.images.forEach((image, ordinal) => {
        insertImage.run(rowid, ordinal, image.hash, image.caption, image.derivedText, image.origin);
        for (const [space, vector] of Object.entries(node.imageVectors[ordinal] ?? {})) {
          insertVectorRow(space, rowid * imageSlots + ordinal, vector, meta);
          if (image.hash) cacheVector.run(image.hash, space, vectorBytes(vector));
        }
      });
    }

    // The index changes of this session land with it, or not at all.
    applyPlan(db, this.#key, write.index.plan, write.index.spaces, (pointer) => {
      const position = pointer.startsWith("@") ? Number(pointer.slice(1)) : Number.NaN;
      const rowid = Number.isInteger(position) ? rowids[position] : this.#rawNodeRowid(pointer);
      if (rowid === undefined) throw new StoreError("commitSession", `index pointer ${pointer} names no raw node`);
      return rowid;
    });
    for (const audit of write.index.plan.audits) this.#audit(audit.action, audit.subject, audit.details);
    const entryIds = [...new Set(write.index.plan.ops.map((op) => (op.op === "put" ? op.entry.id : op.entryId)))];

    this.#audit("session.add", sessionId, {
      sessionKey: write.key,
      rawNodes: rawNodeIds.length,
      images: imageCount,
      blobs: write.blobs.length,
      entries: entryIds,
    });
    const session = this.#sessionById(sessionId);
    if (!session) throw new StoreError("commitSession", "session vanished inside its own transaction");
    return { session, rawNodeIds, entryIds, duplicate: false };
  }

  #vectorStatement(statements: Map<string, BetterSqlite3Statement>, space: string): BetterSqlite3Statement {
    const statement = statements.get(space);
    if (!statement) throw new StoreError("commitSession", `vector for undeclared space ${space}`);
    return statement;
  }

  async getSession(id: string): Promise<SessionRecord> {
    const session = this.#sessionById(id);
    if (!session) throw new NotFoundError("session", id);
    return session;
  }

  async findSessionByKey(key: string): Promise<SessionRecord | null> {
    const row = this.#db
      .prepare("SELECT * FROM sessions WHERE scope_key = ? AND session_key = ?")
      .get(this.#key, key) as SessionRow | undefined;
    return row ? toSession(row) : null;
  }

  async listSessions(options: { limit?: number; offset?: number } = {}): Promise<SessionRecord[]> {
    const rows = this.#db
      .prepare("SELECT * FROM sessions WHERE scope_key = ? ORDER BY time_ms, rowid LIMIT ? OFFSET ?")
      .all(this.#key, options.limit ?? -1, options.offset ?? 0) as SessionRow[];
    return rows.map(toSession);
  }

  #sessionById(id: string): SessionRecord | null {
    const row = this.#db.prepare("SELECT * FROM sessions WHERE scope_key = ? AND id = ?").get(this.#key, id) as
      | SessionRow
      | undefined;
    return row ? toSession(row) : null;
  }

  async getRawNode(id: string): Promise<RawNode> {
    const [node] = await this.getRawNodes([id]);
    if (!node) throw new NotFoundError("raw node", id);
    return node;
  }

  async getRawNodes(ids: readonly string[]): Promise<RawNode[]> {
    if (ids.length === 0) return [];
    const rows = this.#db
      .prepare(
        // `+r.scope_key`: otherwise SQLite walks the scope's whole index (~15 ms at 100k) instead of the ids.
        `SELECT ${rawNodeColumns} FROM raw_nodes r JOIN sessions s ON s.rowid = r.session_rowid
         WHERE +r.scope_key = ? AND r.id IN (SELECT value FROM json_each(?))`,
      )
      .all(this.#key, JSON.stringify(ids)) as RawNodeRow[];
    const byId = new Map(this.#withImages(rows).map((node) => [node.id, node]));
    return ids.map((id) => byId.get(id)).filter((node): node is RawNode => node !== undefined);
  }

  async listRawNodes(options: { sessionId: string }): Promise<RawNode[]> {
    const rows = this.#db
      .prepare(
        `SELECT ${rawNodeColumns} FROM raw_nodes r JOIN sessions s ON s.rowid = r.session_rowid
         WHERE r.scope_key = ? AND s.id = ? ORDER BY r.turn`,
      )
      .all(this.#key, options.sessionId) as RawNodeRow[];
    return this.#withImages(rows);
  }

  #withImages(rows: RawNodeRow[]): RawNode[] {
    if (rows.length === 0) return [];
    const images = this.#db
      .prepare(
        `SELECT i.*, b.media_type, b.bytes, b.width, b.height FROM raw_node_images i LEFT JOIN blobs b ON b.hash = i.blob_hash
         WHERE i.raw_node_rowid IN (SELECT value FROM json_each(?)) ORDER BY i.raw_node_rowid, i.ordinal`,
      )
      .all(JSON.stringify(rows.map((row) => row.rowid))) as ImageRow[];
    const byNode = new Map<number, ImageRef[]>();
    for (const image of images) {
      const list = byNode.get(image.raw_node_rowid) ?? [];
      list.push({
        ordinal: image.ordinal,
        hash: image.blob_hash,
        mediaType: image.media_type,
        bytes: image.bytes,
        width: image.width,
        height: image.height,
        caption: image.caption,
        derivedText: image.derived_text,
        origin: image.origin,
      });
      byNode.set(image.raw_node_rowid, list);
    }
    return rows.map((row) => ({
      id: row.id,
      sessionId: row.session_id,
      sessionKey: row.session_key,
      turn: row.turn,
      speaker: row.speaker,
      role: row.role,
      text: row.text,
      time: new Date(row.time_ms).toISOString(),
      source: row.source,
      uri: row.uri,
      images: byNode.get(row.rowid) ?? [],
      metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    }));
  }

  async getBlob(hash: string): Promise<{ record: BlobRecord; data: Uint8Array }> {
    const record = this.#blobInScope(hash);
    try {
      return { record, data: this.#store.files.read(hash) };
    } catch (error) {
      throw new StoreError("getBlob", error);
    }
  }

  async getThumbnail(hash: string): Promise<Uint8Array> {
    this.#blobInScope(hash);
    try {
      return this.#store.files.readThumbnail(hash);
    } catch (error) {
      throw new StoreError("getThumbnail", error);
    }
  }

  /** A blob is visible to a scope only while one of the scope's raw nodes references it. */
  #blobInScope(hash: string): BlobRecord {
    const row = this.#db
      .prepare(
        `SELECT b.hash, b.media_type, b.bytes, b.width, b.height FROM blobs b
         WHERE b.hash = ? AND EXISTS (SELECT 1 FROM raw_node_images i JOIN raw_nodes r ON r.rowid = i.raw_node_rowid
                                      WHERE i.blob_hash = b.hash AND r.scope_key = ?)`,
      )
      .get(hash, this.#key) as
      | { hash: string; media_type: string; bytes: number; width: number; height: number }
      | undefined;
    if (!row) throw new NotFoundError("blob", hash);
    return { hash: row.hash, mediaType: row.media_type, bytes: row.bytes, width: row.width, height: row.height };
  }

  async searchLexical(
    field: LexicalField,
    query: string,
    options: { limit: number; filters?: SearchFilters },
  ): Promise<Ranked[]> {
    const terms = toMatchExpression(query);
    if (!terms) return [];
    const table = field === "text" ? "fts_text" : "fts_image_text";
    // The scope token keeps ranking work proportional to this scope when others share the table. But
    // FTS5's bm25 counts the documents of every phrase on every query, the token's too: a pass over
    // the whole scope (~5 ms of ~11 at 100k). With no other scope stored it cannot exclude anything,
    // so it is left out; the raw_nodes join below keeps results scoped either way.
    const match = this.#otherScopesStored() ? `${this.#scopeToken} AND (${terms})` : terms;
    const filter = this.#filterSql(options.filters, "r");
    const rows = this.#db
      .prepare(
        `SELECT r.id, f.rank AS rank FROM ${table} f JOIN raw_nodes r ON r.rowid = f.rowid
         WHERE ${table} MATCH ? AND r.scope_key = ? ${filter.sql} ORDER BY f.rank LIMIT ?`,
      )
      .all(match, this.#key, ...filter.params, options.limit) as { id: string; rank: number }[];
    // FTS5's rank is negated BM25: flip it so larger is better everywhere.
    return rows.map((row) => ({ id: row.id, score: -row.rank }));
  }

  /** Two index seeks (keys sort around this one), so it costs microseconds at any size. */
  #otherScopesStored(): boolean {
    return (
      this.#db
        .prepare(
          "SELECT EXISTS (SELECT 1 FROM raw_nodes WHERE scope_key < ?) OR EXISTS (SELECT 1 FROM raw_nodes WHERE scope_key > ?)",
        )
        .pluck()
        .get(this.#key, this.#key) === 1
    );
  }

  /**
   * Above the ANN threshold a partition is searched through its HNSW index (over-fetching when
   * filters apply, since they are checked afterwards); below it, while its index is being built, or
   * when filters leave too few candidates, vec0 scans the partition exactly.
   */
  async searchVectors(
    spaceName: string,
    vector: Float32Array,
    options: { limit: number; filters?: SearchFilters },
  ): Promise<Ranked[]> {
    const space = this.#store.space(spaceName);
    if (!space) return [];
    if (space.dimensions !== vector.length) {
      throw new StoreError("searchVectors", `space ${spaceName} is ${space.dimensions}-d, query is ${vector.length}-d`);
    }
    // Several images of one turn can match: fetch extra rows so `limit` distinct raw nodes remain.
    const wanted = space.kind === "image" ? options.limit * 4 : options.limit;
    const filtered = hasFilters(options.filters);
    const indexes = this.#store.vectorIndexes;
    const table = { table: space.table_name, kind: space.kind, dimensions: space.dimensions };
    const neighbours = indexes.search(
      table,
      this.#key,
      vector,
      filtered ? wanted * indexes.options.filterOverFetch : wanted,
    );
    if (neighbours) {
      const ranked = this.#rankNodes(space.kind, neighbours, options);
      if (!filtered || ranked.length >= options.limit) return ranked;
    }
    const filter = this.#vectorFilterSql(options.filters);
    const rows = this.#db
      .prepare(
        `SELECT rowid, distance FROM ${space.table_name} WHERE embedding MATCH ? AND k = ? AND scope_key = ? ${filter.sql}`,
      )
      .all(vector, wanted, this.#key, ...filter.params) as { rowid: number; distance: number }[];
    // vec0 applied the filters already.
    const exact = rows.map((row) => ({ rowid: row.rowid, similarity: 1 - row.distance }));
    return this.#rankNodes(space.kind, exact, { limit: options.limit });
  }

  /**
   * Vector hits → raw nodes, best first: a node scores its best vector; rowids that are not (or no
   * longer) this scope's raw nodes, or that fail the filters, are dropped.
   */
  #rankNodes(
    kind: "text" | "image",
    neighbours: readonly Neighbour[],
    options: { limit: number; filters?: SearchFilters },
  ): Ranked[] {
    const best = new Map<number, number>();
    for (const { rowid, similarity } of neighbours) {
      const nodeRowid = kind === "image" ? Math.floor(rowid / imageSlots) : rowid;
      if (similarity > (best.get(nodeRowid) ?? Number.NEGATIVE_INFINITY)) best.set(nodeRowid, similarity);
    }
    if (best.size === 0) return [];
    const filter = this.#filterSql(options.filters, "r");
    // `+r.scope_key`: without it SQLite walks the whole scope's index instead of the rowid list.
    const rows = this.#db
      .prepare(
        `SELECT r.rowid, r.id FROM raw_nodes r WHERE r.rowid IN (SELECT value FROM json_each(?)) AND +r.scope_key = ? ${filter.sql}`,
      )
      .all(JSON.stringify([...best.keys()]), this.#key, ...filter.params) as { rowid: number; id: string }[];
    return rows
      .map((row) => ({ id: row.id, score: best.get(row.rowid) ?? 0 }))
      .sort((left, right) => right.score - left.score)
      .slice(0, options.limit);
  }

  #filterSql(filters: SearchFilters | undefined, alias: string): { sql: string; params: unknown[] } {
    const clauses: string[] = [];
    const params: unknown[] = [];
    if (filters?.sessionKeys?.length) {
      clauses.push(
        `${alias}.session_rowid IN (SELECT rowid FROM sessions WHERE scope_key = ? AND session_key IN (SELECT value FROM json_each(?)))`,
      );
      params.push(this.#key, JSON.stringify(filters.sessionKeys));
    }
    if (filters?.timeFromMs !== undefined) {
      clauses.push(`${alias}.time_ms >= ?`);
      params.push(filters.timeFromMs);
    }
    if (filters?.timeToMs !== undefined) {
      clauses.push(`${alias}.time_ms <= ?`);
      params.push(filters.timeToMs);
    }
    if (filters?.speakers?.length) {
      clauses.push(`${alias}.speaker IN (SELECT value FROM json_each(?))`);
      params.push(JSON.stringify(filters.speakers));
    }
    return { sql: clauses.map((clause) => `AND ${clause}`).join(" "), params };
  }

  /** vec0 filters only on its own metadata columns, with literal lists. */
  #vectorFilterSql(filters: SearchFilters | undefined): { sql: string; params: unknown[] } {
    const clauses: string[] = [];
    const params: unknown[] = [];
    if (filters?.sessionKeys?.length) {
      const rowids = this.#db
        .prepare("SELECT rowid FROM sessions WHERE scope_key = ? AND session_key IN (SELECT value FROM json_each(?))")
        .all(this.#key, JSON.stringify(filters.sessionKeys)) as { rowid: number }[];
      const list = rowids.length > 0 ? rowids : [{ rowid: -1 }];
      clauses.push(`session_rowid IN (${list.map(() => "?").join(", ")})`);
      params.push(...list.map((row) => BigInt(row.rowid)));
    }
    if (filters?.timeFromMs !== undefined) {
      clauses.push("time_ms >= ?");
      params.push(BigInt(filters.timeFromMs));
    }
    if (filters?.timeToMs !== undefined) {
      clauses.push("time_ms <= ?");
      params.push(BigInt(filters.timeToMs));
    }
    if (filters?.speakers?.length) {
      clauses.push(`speaker IN (${filters.speakers.map(() => "?").join(", ")})`);
      params.push(...filters.speakers);
    }
    return { sql: clauses.map((clause) => `AND ${clause}`).join(" "), params };
  }

  async listEntries(options: { limit?: number; offset?: number; status?: Entry["status"] } = {}): Promise<Entry[]> {
    const state = readIndex(this.#db, this.#key, { activeOnly: options.status === "active" });
    const entries = [...state.entries.values()].filter((entry) => !options.status || entry.status === options.status);
    const offset = options.offset ?? 0;
    return entries
      .sort((a, b) => a.timeStartMs - b.timeStartMs || a.id.localeCompare(b.id))
      .slice(offset, options.limit === undefined ? undefined : offset + options.limit)
      .map(toPublicEntry);
  }

  async readIndex(options: { activeOnly: boolean }): Promise<IndexState> {
    return readIndex(this.#db, this.#key, options);
  }

  async indexVersion(): Promise<number> {
    return indexVersion(this.#db, this.#key);
  }

  async readLinkedEntries(options: {
    hosts: readonly string[];
    ids: readonly string[];
    nearest?: { vector: Float32Array; perHost: number };
  }): Promise<IndexEntry[]> {
    return readLinked(this.#db, this.#key, options);
  }

  async indexNeedsRebuild(): Promise<boolean> {
    const row = this.#db.prepare("SELECT needs_rebuild FROM index_state WHERE scope_key = ?").pluck().get(this.#key);
    return row === 1;
  }

  async rebuildIndex(plan: MaintenancePlan, spaces: { text: string; image: string | null }): Promise<void> {
    try {
      this.#db
        .transaction(() => {
          forgetWholeIndex(this.#db, this.#key);
          // Versions only grow, so a plan made before the rebuild can never apply after it.
          const version = indexVersion(this.#db, this.#key) + 1;
          this.#db
            .prepare(
              `INSERT INTO index_state (scope_key, version, needs_rebuild) VALUES (?, ?, 0)
               ON CONFLICT (scope_key) DO UPDATE SET version = excluded.version, needs_rebuild = 0`,
            )
            .run(this.#key, version);
          applyPlan(this.#db, this.#key, { ...plan, baseVersion: version }, spaces, (pointer) => {
            const rowid = this.#rawNodeRowid(pointer);
            if (rowid === undefined) throw new StoreError("rebuildIndex", `index pointer ${pointer} names no raw node`);
            return rowid;
          });
          for (const audit of plan.audits) this.#audit(audit.action, audit.subject, audit.details);
          this.#audit("index.rebuild", "index", { entries: plan.ops.length, result: {} });
        })
        .immediate();
    } catch (error) {
      throw new StoreError("rebuildIndex", error);
    }
  }

  async neighbours(rawNodeIds: readonly string[], window: number): Promise<Map<string, string>> {
    const rows = this.#db
      .prepare(
        `SELECT n.id, r.id AS near FROM raw_nodes r
         JOIN raw_nodes n ON n.session_rowid = r.session_rowid AND n.turn BETWEEN r.turn - ? AND r.turn + ?
         WHERE r.scope_key = ? AND n.scope_key = ? AND r.id IN (SELECT value FROM json_each(?)) AND n.id != r.id`,
      )
      .all(window, window, this.#key, this.#key, JSON.stringify(rawNodeIds)) as { id: string; near: string }[];
    const out = new Map<string, string>();
    for (const row of rows) if (!out.has(row.id)) out.set(row.id, row.near);
    return out;
  }

  async getTextVectors(space: string, rawNodeIds: readonly string[]): Promise<Map<string, Float32Array>> {
    const table = this.#store.spaces().find((row) => row.name === space)?.table_name;
    const out = new Map<string, Float32Array>();
    if (!table) return out;
    const rowids = this.#db
      .prepare("SELECT rowid, id FROM raw_nodes WHERE scope_key = ? AND id IN (SELECT value FROM json_each(?))")
      .all(this.#key, JSON.stringify(rawNodeIds)) as { rowid: number; id: string }[];
    const select = this.#db.prepare(`SELECT embedding FROM ${table} WHERE rowid = ?`).pluck();
    for (const { rowid, id } of rowids) {
      const blob = select.get(BigInt(rowid)) as Buffer | undefined;
      if (blob) out.set(id, vectorFromBytes(blob));
    }
    return out;
  }

  #rawNodeRowid(id: string): number | undefined {
    return this.#db.prepare("SELECT rowid FROM raw_nodes WHERE scope_key = ? AND id = ?").pluck().get(this.#key, id) as
      | number
      | undefined;
  }

  async forget(target: ForgetTarget): Promise<ForgetResult> {
    const files = this.#store.files;
    // Journal the blobs this forget may orphan: if the process dies after the commit, the next
    // open still deletes their files, so forgotten pixels never outlive their rows.
    const journal = files.begin(this.#blobsOf(target));
    const removedVectors: { table: string; rowids: number[] }[] = [];
    try {
      const result = this.#db.transaction(() => this.#forget(target, removedVectors)).immediate();
      this.#store.vectorIndexes.afterForget(this.#key, removedVectors);
      return result;
    } catch (error) {
      if (error instanceof NotFoundError) throw error;
      throw new StoreError("forget", error);
    } finally {
      files.settle(journal, (hash) => this.#store.hasBlob(hash));
    }
  }

  #blobsOf(target: ForgetTarget): string[] {
    try {
      const { nodeRowids } = this.#forgetTargets(target);
      return (
        this.#db
          .prepare(
            "SELECT DISTINCT blob_hash FROM raw_node_images WHERE blob_hash IS NOT NULL AND raw_node_rowid IN (SELECT value FROM json_each(?))",
          )
          .all(JSON.stringify(nodeRowids)) as { blob_hash: string }[]
      ).map((row) => row.blob_hash);
    } catch (error) {
      if (error instanceof NotFoundError) return [];
      throw error;
    }
  }

  /** `removedVectors` collects the vec0 rowids deleted per table, for the loaded ANN indexes. */
  #forget(target: ForgetTarget, removedVectors: { table: string; rowids: number[] }[]): ForgetResult {
    const removedBlobs: string[] = [];
    const db = this.#db;
    const { nodeRowids, sessionRowids, subject } = this.#forgetTargets(target);
    const spaces = this.#store.spaces();
    // Inside the write lock and before any row goes: persisted ANN indexes of this scope are deleted.
    this.#store.vectorIndexes.beforeForget(
      this.#key,
      spaces.map((space) => ({ table: space.table_name, kind: space.kind, dimensions: space.dimensions })),
    );
    const nodes = JSON.stringify(nodeRowids);
    const blobHashes = (
      db
        .prepare(
          "SELECT DISTINCT blob_hash FROM raw_node_images WHERE blob_hash IS NOT NULL AND raw_node_rowid IN (SELECT value FROM json_each(?))",
        )
        .all(nodes) as { blob_hash: string }[]
    ).map((row) => row.blob_hash);

    const imageRowids = (
      db
        .prepare(
          "SELECT raw_node_rowid, ordinal FROM raw_node_images WHERE raw_node_rowid IN (SELECT value FROM json_each(?))",
        )
        .all(nodes) as { raw_node_rowid: number; ordinal: number }[]
    ).map((row) => row.raw_node_rowid * imageSlots + row.ordinal);
    for (const space of spaces) {
      const rowids = space.kind === "text" ? nodeRowids : imageRowids;
      db.prepare(`DELETE FROM ${space.table_name} WHERE rowid IN (SELECT value FROM json_each(?))`).run(
        JSON.stringify(rowids),
      );
      removedVectors.push({ table: space.table_name, rowids });
    }
    db.prepare("DELETE FROM fts_text WHERE rowid IN (SELECT value FROM json_each(?))").run(nodes);
    db.prepare("DELETE FROM fts_image_text WHERE rowid IN (SELECT value FROM json_each(?))").run(nodes);
    db.prepare("DELETE FROM raw_node_images WHERE raw_node_rowid IN (SELECT value FROM json_each(?))").run(nodes);

    // Entries derived from these raw nodes are re-derived from what remains, or removed.
    const index =
      "all" in target
        ? { removed: forgetWholeIndex(db, this.#key), rebuilt: 0 }
        : forgetFromIndex(
            db,
            this.#key,
            nodeRowids,
            (name) => spaces.find((space) => space.name === name)?.table_name ?? null,
          );
    const touchedSessions = JSON.stringify(
      (
        db
          .prepare("SELECT DISTINCT session_rowid FROM raw_nodes WHERE rowid IN (SELECT value FROM json_each(?))")
          .all(nodes) as { session_rowid: number }[]
      ).map((row) => row.session_rowid),
    );
    db.prepare("DELETE FROM raw_nodes WHERE rowid IN (SELECT value FROM json_each(?))").run(nodes);
    // A session that keeps some raw nodes reports what it still holds.
    db.prepare(
      `UPDATE sessions SET
         turn_count = (SELECT count(*) FROM raw_nodes r WHERE r.session_rowid = sessions.rowid),
         image_count = (SELECT count(*) FROM raw_node_images i JOIN raw_nodes r ON r.rowid = i.raw_node_rowid
                        WHERE r.session_rowid = sessions.rowid)
       WHERE rowid IN (SELECT value FROM json_each(?))`,
    ).run(touchedSessions);
    const entriesDeleted = index.removed;
    db.prepare("DELETE FROM sessions WHERE rowid IN (SELECT value FROM json_each(?))").run(
      JSON.stringify(sessionRowids),
    );

    for (const hash of blobHashes) {
      const stillUsed = db.prepare("SELECT 1 FROM raw_node_images WHERE blob_hash = ? LIMIT 1").get(hash);
      if (stillUsed) continue;
      db.prepare("DELETE FROM blob_vectors WHERE blob_hash = ?").run(hash);
      db.prepare("DELETE FROM blobs WHERE hash = ?").run(hash);
      removedBlobs.push(hash);
    }
    const details = {
      target: "all" in target ? "all" : "session" in target ? "session" : "rawNode",
      sessions: sessionRowids.length,
      rawNodes: nodeRowids.length,
      entries: entriesDeleted,
      entriesRederived: index.rebuilt,
      blobsDeleted: removedBlobs.length,
    };
    const auditId = this.#audit("forget", subject, details);
    return {
      sessions: sessionRowids.length,
      rawNodes: nodeRowids.length,
      entries: entriesDeleted,
      blobsDeleted: removedBlobs.length,
      auditId,
    };
  }

  #forgetTargets(target: ForgetTarget): { nodeRowids: number[]; sessionRowids: number[]; subject: string } {
    const db = this.#db;
    const nodeRowidsOf = (sql: string, ...params: unknown[]) =>
      (db.prepare(sql).all(...params) as { rowid: number }[]).map((row) => row.rowid);
    if ("all" in target) {
      return {
        nodeRowids: nodeRowidsOf("SELECT rowid FROM raw_nodes WHERE scope_key = ?", this.#key),
        sessionRowids: nodeRowidsOf("SELECT rowid FROM sessions WHERE scope_key = ?", this.#key),
        subject: "scope",
      };
    }
    if ("session" in target) {
      const row = db
        .prepare(
          "SELECT rowid, id FROM sessions WHERE scope_key = ? AND (id = ? OR session_key = ?) ORDER BY id = ? DESC LIMIT 1",
        )
        .get(this.#key, target.session, target.session, target.session) as { rowid: number; id: string } | undefined;
      if (!row) throw new NotFoundError("session", target.session);
      return {
        nodeRowids: nodeRowidsOf(
          "SELECT rowid FROM raw_nodes WHERE scope_key = ? AND session_rowid = ?",
          this.#key,
          row.rowid,
        ),
        sessionRowids: [row.rowid],
        subject: row.id,
      };
    }
    const row = db
      .prepare("SELECT rowid FROM raw_nodes WHERE scope_key = ? AND id = ?")
      .get(this.#key, target.rawNode) as { rowid: number } | undefined;
    if (!row) throw new NotFoundError("raw node", target.rawNode);
    return { nodeRowids: [row.rowid], sessionRowids: [], subject: target.rawNode };
  }

  async listAudit(options: { limit?: number; offset?: number } = {}): Promise<AuditEvent[]> {
    const rows = this.#db
      .prepare("SELECT * FROM audit_events WHERE scope_key = ? ORDER BY rowid DESC LIMIT ? OFFSET ?")
      .all(this.#key, options.limit ?? 100, options.offset ?? 0) as {
      id: string;
      time_ms: number;
      action: string;
      subject: string;
      details: string;
    }[];
    return rows.map((row) => ({
      id: row.id,
      time: new Date(row.time_ms).toISOString(),
      action: row.action,
      subject: row.subject,
      details: JSON.parse(row.details) as Record<string, unknown>,
    }));
  }

  async knownImages(
    hashes: readonly string[],
    imageSpace: string | null,
  ): Promise<Map<string, { vector: Float32Array | null; derivedText: string | null }>> {
    const vectorOf = this.#db.prepare("SELECT vector FROM blob_vectors WHERE blob_hash = ? AND space = ?").pluck();
    const textOf = this.#db
      .prepare("SELECT derived_text FROM raw_node_images WHERE blob_hash = ? AND derived_text IS NOT NULL LIMIT 1")
      .pluck();
    const known = new Map<string, { vector: Float32Array | null; derivedText: string | null }>();
    for (const hash of hashes) {
      if (!this.#store.hasBlob(hash)) continue;
      const bytes = imageSpace ? (vectorOf.get(hash, imageSpace) as Buffer | undefined) : undefined;
      // Copy: the Buffer may be a view into a pooled allocation.
      const vector = bytes ? vectorFromBytes(bytes) : null;
      known.set(hash, { vector, derivedText: (textOf.get(hash) as string | undefined) ?? null });
    }
    return known;
  }

  async stats(): Promise<ScopeStats> {
    const count = (sql: string) => (this.#db.prepare(sql).get(this.#key) as { n: number }).n;
    return {
      sessions: count("SELECT count(*) AS n FROM sessions WHERE scope_key = ?"),
      rawNodes: count("SELECT count(*) AS n FROM raw_nodes WHERE scope_key = ?"),
      images: count(
        "SELECT count(*) AS n FROM raw_node_images i JOIN raw_nodes r ON r.rowid = i.raw_node_rowid WHERE r.scope_key = ?",
      ),
      entries: count("SELECT count(*) AS n FROM index_entries WHERE scope_key = ? AND status = 'active'"),
      auditEvents: count("SELECT count(*) AS n FROM audit_events WHERE scope_key = ?"),
    };
  }

  #audit(action: string, subject: string, details: Record<string, unknown>): string {
    const id = this.#store.newId("aud");
    this.#db
      .prepare("INSERT INTO audit_events (id, scope_key, time_ms, action, subject, details) VALUES (?, ?, ?, ?, ?, ?)")
      .run(id, this.#key, this.#store.now(), action, subject, JSON.stringify(details));
    return id;
  }
}

type BetterSqlite3Statement = Statement<unknown[]>;

function toSession(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    key: row.session_key,
    time: new Date(row.time_ms).toISOString(),
    source: row.source,
    turnCount: row.turn_count,
    imageCount: row.image_count,
    contentHash: row.content_hash,
    createdAt: new Date(row.created_ms).toISOString(),
  };
}

function hasFilters(filters: SearchFilters | undefined): boolean {
  return Boolean(
    filters?.sessionKeys?.length ||
      filters?.speakers?.length ||
      filters?.timeFromMs !== undefined ||
      filters?.timeToMs !== undefined,
  );
}
