import type pg from "pg";
import type { Ranked } from "../../core/ranked.ts";
import type { Scope } from "../../core/scope.ts";
import type { BankAudit, BankProgram } from "../bank-records.ts";
import { BatchPlans } from "../batch-writes.ts";
import type { IndexEntry, IndexState, MaintenancePlan } from "../index-records.ts";
import type { SessionRow } from "../record-rows.ts";
import type {
  AuditEvent,
  BlobRecord,
  CommitResult,
  ForgetResult,
  RawNode,
  ScopeStats,
  SearchFilters,
  SessionRecord,
  SessionWrite,
  VectorReplacement,
  VectorSpace,
} from "../records.ts";
import type {
  ForgetRequest,
  LexicalField,
  RawNodeQuery,
  ScopedStore,
  SessionIdentity,
  SessionPart,
  SessionQuery,
} from "../store.ts";
import type { NotifierRuleState, VideoItem, VideoItemQuery, VideoWrite } from "../video-records.ts";
import { readAudit } from "./audit-events.ts";
import { commitSession, importSession } from "./commit-session.ts";
import { forget } from "./forget.ts";
import { lockIndexStatement, readIndex, readLinked } from "./index-rows.ts";
import { admitPrograms, readBank, refreshPrograms, retirePrograms } from "./question-bank.ts";
import { type KnownImageRow, knownImagesFrom, knownImagesStatement, readBlob } from "./read-blobs.ts";
import { readRawNodes, readRawNodesByIdInOneTrip } from "./read-raw-nodes.ts";
import { readSessionParts, sessionsFrom, sessionsStatement } from "./read-sessions.ts";
import { readVectors } from "./read-vectors.ts";
import { replaceVectors } from "./replace-vectors.ts";
import type { ScopeContext, StoreServices } from "./scope-context.ts";
import {
  applyIndexPlan,
  type IndexStatusRow,
  indexStatusFrom,
  indexStatusStatement,
  restoreIndexAndAudit,
} from "./scope-index.ts";
import { scopeStats } from "./scope-stats.ts";
import { type PostgresLexicalTrace, searchLexical, searchLexicalInOneTrip } from "./search-lexical.ts";
import { searchVectors, searchVectorsInOneTrip } from "./search-vectors.ts";
import { inTenant, oneTripSql, readInOneTrip, type Sql } from "./tenant-transaction.ts";
import { commitVideo, readNotifierState, readNotifierStreams, readVideoItems } from "./video-items.ts";

/**
 * One scope's handle on the Postgres store. Each method is one transaction walled to the scope's
 * tenant (row-level security), delegating to the module of its job; every statement those run
 * binds this scope's key as well, so a foreign id looks exactly like a missing one.
 */
export class PostgresScopedStore implements ScopedStore {
  readonly scope: Scope;
  readonly #pool: pg.Pool;
  readonly #context: ScopeContext;

  constructor(pool: pg.Pool, store: StoreServices, scope: Scope, key: string) {
    this.scope = scope;
    this.#pool = pool;
    this.#context = Object.freeze({ key, tenant: scope.tenant, store });
  }

  #read<T>(operation: string, work: (sql: Sql) => Promise<T>): Promise<T> {
    return inTenant(this.#pool, this.#context.tenant, operation, work, { readOnly: true });
  }

  #write<T>(operation: string, work: (sql: Sql) => Promise<T>): Promise<T> {
    return this.#context.store.writers.run(this.#context.key, () =>
      inTenant(this.#pool, this.#context.tenant, operation, work),
    );
  }

  // ── Cold store ──────────────────────────────────────────────────────────────────────────────
  async commitSession(write: SessionWrite): Promise<CommitResult> {
    // The scope's lock rides on the round trip that opens the transaction.
    return this.#context.store.writers.run(this.#context.key, () =>
      inTenant(
        this.#pool,
        this.#context.tenant,
        "commitSession",
        (sql, opened) => commitSession(this.#context, sql, write, Number(opened[0]?.version ?? 0)),
        { opening: { text: lockIndexStatement.text, values: lockIndexStatement.values(this.#context) } },
      ),
    );
  }

  /** One transaction for the lot: each write as `commitSession` writes it, in order (`BatchPlans`). */
  async commitSessions(writes: readonly SessionWrite[]): Promise<CommitResult[]> {
    const batch = new BatchPlans(writes);
    return this.#write("commitSessions", async (sql) => {
      const results: CommitResult[] = [];
      for (const index of writes.keys()) {
        const result = await commitSession(this.#context, sql, batch.write(index));
        batch.committed(index, result.rawNodeIds);
        results.push(result);
      }
      return results;
    });
  }

  async readSessions(query: SessionQuery): Promise<SessionRecord[]> {
    // One statement: one round trip (a commit asks whether its key is stored before planning).
    const statement = sessionsStatement(this.#context, query);
    if (!statement) return [];
    const rows = await readInOneTrip<SessionRow>(this.#pool, this.#context.tenant, "readSessions", statement);
    return sessionsFrom(rows, query);
  }

  async readRawNodes(query: RawNodeQuery): Promise<RawNode[]> {
    if ("ids" in query) return readRawNodesByIdInOneTrip(this.#context, this.#pool, query.ids);
    return this.#read("readRawNodes", (sql) => readRawNodes(this.#context, sql, query));
  }

  async readBlob(
    hash: string,
    options: { thumbnail?: boolean } = {},
  ): Promise<{ record: BlobRecord; data: Uint8Array }> {
    return this.#read(options.thumbnail ? "readThumbnail" : "readBlob", (sql) =>
      readBlob(this.#context, sql, hash, options),
    );
  }

  async knownImages(
    hashes: readonly string[],
    imageSpace: string | null,
  ): Promise<Map<string, { vector: Float32Array | null; derivedText: string | null }>> {
    if (hashes.length === 0) return new Map(); // no transaction for nothing to read
    // One round trip: read before every commit of a session with images.
    const statement = knownImagesStatement(this.#context, hashes, imageSpace);
    return knownImagesFrom(
      await readInOneTrip<KnownImageRow>(this.#pool, this.#context.tenant, "knownImages", statement),
    );
  }

  async forget(request: ForgetRequest): Promise<ForgetResult> {
    return this.#write("forget", (sql) => forget(this.#context, sql, request));
  }

  async readAudit(options: { limit?: number; offset?: number } = {}): Promise<AuditEvent[]> {
    return this.#read("readAudit", (sql) => readAudit(this.#context, sql, options));
  }

  async stats(): Promise<ScopeStats> {
    return this.#read("stats", (sql) => scopeStats(this.#context, sql));
  }

  // ── Channel index ───────────────────────────────────────────────────────────────────────────
  async searchLexical(
    field: LexicalField,
    query: string,
    options: { limit: number; filters?: SearchFilters },
    trace?: PostgresLexicalTrace,
  ): Promise<Ranked[]> {
    const quick = await searchLexicalInOneTrip(this.#context, this.#pool, field, query, options, trace);
    if (quick) return quick;
    return this.#read("searchLexical", (sql) => searchLexical(this.#context, sql, field, query, options, trace));
  }

  async searchVectors(
    space: string,
    vector: Float32Array,
    options: { limit: number; filters?: SearchFilters },
  ): Promise<Ranked[]> {
    const quick = await searchVectorsInOneTrip(this.#context, space, vector, options);
    if (quick) return quick;
    return inTenant(
      this.#pool,
      this.#context.tenant,
      "searchVectors",
      (sql) => searchVectors(this.#context, sql, space, vector, options),
      { readOnly: true },
    );
  }

  async readVectors(space: string, rawNodeIds: readonly string[]): Promise<Map<string, Float32Array>> {
    const known = await this.#context.store.spaces.named(space);
    if (!known) return new Map();
    // One statement: one round trip, its COMMIT included (a routed search reads its candidates' vectors).
    return readVectors(this.#context, oneTripSql(this.#pool, this.#context.tenant, "readVectors"), known, rawNodeIds);
  }

  async replaceVectors(write: VectorReplacement): Promise<{ readonly vectors: number }> {
    return this.#write("replaceVectors", (sql) => replaceVectors(this.#context, sql, write));
  }

  async vectorSpacesInUse(): Promise<VectorSpace[]> {
    return this.#read("vectorSpacesInUse", async (sql) => {
      const inUse: VectorSpace[] = [];
      for (const space of await this.#context.store.spaces.all(sql)) {
        const [row] = await sql.query(`SELECT 1 FROM ${space.table_name} WHERE scope_key = $1 LIMIT 1`, [
          this.#context.key,
        ]);
        if (row) inUse.push({ name: space.name, kind: space.kind, dimensions: space.dimensions });
      }
      return inUse.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
    });
  }

  // ── Active index ────────────────────────────────────────────────────────────────────────────
  async readIndex(options: { activeOnly: boolean }): Promise<IndexState> {
    return this.#read("readIndex", (sql) => readIndex(this.#context, sql, options));
  }

  async indexStatus(): Promise<{ version: number; needsRebuild: boolean }> {
    // One round trip: read before every commit's plan.
    return indexStatusFrom(
      await readInOneTrip<IndexStatusRow>(
        this.#pool,
        this.#context.tenant,
        "indexStatus",
        indexStatusStatement(this.#context),
      ),
    );
  }

  async readLinkedEntries(options: { hosts: readonly string[]; ids: readonly string[] }): Promise<IndexEntry[]> {
    return this.#read("readLinkedEntries", (sql) => readLinked(this.#context, sql, options));
  }

  async applyIndexPlan(
    plan: MaintenancePlan,
    options: { readonly spaces: { readonly text: string; readonly image: string | null }; readonly replace: boolean },
  ): Promise<void> {
    return this.#write("applyIndexPlan", (sql) => applyIndexPlan(this.#context, sql, plan, options));
  }

  // ── Question bank ──────────────────────────────────────────────────────────────────────────
  async admitPrograms(programs: readonly BankProgram[], audit: BankAudit): Promise<void> {
    return this.#write("admitPrograms", (sql) => admitPrograms(this.#context, sql, programs, audit));
  }

  async readBank(options: { limit?: number; offset?: number } = {}): Promise<BankProgram[]> {
    return this.#read("readBank", (sql) => readBank(this.#context, sql, options));
  }

  async refreshPrograms(programs: readonly BankProgram[], audit: BankAudit): Promise<number> {
    return this.#write("refreshPrograms", (sql) => refreshPrograms(this.#context, sql, programs, audit));
  }

  async retirePrograms(ids: readonly string[], audit: BankAudit): Promise<number> {
    return this.#write("retirePrograms", (sql) => retirePrograms(this.#context, sql, ids, audit));
  }

  // ── Video memory ────────────────────────────────────────────────────────────────────────────
  async commitVideo(write: VideoWrite): Promise<void> {
    return this.#write("commitVideo", (sql) => commitVideo(this.#context, sql, write));
  }

  async readVideoItems(query: VideoItemQuery): Promise<VideoItem[]> {
    return this.#read("readVideoItems", (sql) => readVideoItems(this.#context, sql, query));
  }

  async readNotifierState(stream: string): Promise<NotifierRuleState[]> {
    return this.#read("readNotifierState", (sql) => readNotifierState(this.#context, sql, stream));
  }

  async readNotifierStreams(): Promise<string[]> {
    return this.#read("readNotifierStreams", (sql) => readNotifierStreams(this.#context, sql));
  }

  // ── Transfer ────────────────────────────────────────────────────────────────────────────────
  async importSession(write: SessionWrite, identity: SessionIdentity): Promise<{ imported: boolean }> {
    return {
      imported: await this.#write("importSession", (sql) => importSession(this.#context, sql, write, identity)),
    };
  }

  async readSessionParts(sessionIds: readonly string[]): Promise<Map<string, SessionPart[]>> {
    return this.#read("readSessionParts", (sql) => readSessionParts(this.#context, sql, sessionIds));
  }

  async restoreIndexAndAudit(
    index: {
      readonly entries: readonly IndexEntry[];
      readonly spaces: { readonly text: string; readonly image: string | null };
    },
    audit: readonly AuditEvent[],
  ): Promise<void> {
    return this.#write("restoreIndexAndAudit", (sql) => restoreIndexAndAudit(this.#context, sql, index, audit));
  }
}
