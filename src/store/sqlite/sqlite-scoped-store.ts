import type { Database } from "better-sqlite3";
import type { Ranked } from "../../core/ranked.ts";
import type { Scope } from "../../core/scope.ts";
import type { IndexEntry, IndexState, MaintenancePlan } from "../index-records.ts";
import type {
  AuditEvent,
  BlobRecord,
  CommitResult,
  Entry,
  ForgetResult,
  ForgetTarget,
  RawNode,
  ScopeStats,
  SearchFilters,
  SessionRecord,
  SessionWrite,
} from "../records.ts";
import type { LexicalField, ScopedStore } from "../store.ts";
import { listAudit } from "./audit-events.ts";
import { commitSession } from "./commit-session.ts";
import { linkedEntries, neighbours, textVectors } from "./derived-lookups.ts";
import { forget } from "./forget.ts";
import { indexVersion, readIndex } from "./index-rows.ts";
import { getBlob, getThumbnail, knownImages } from "./read-blobs.ts";
import { getRawNode, getRawNodes, listRawNodes } from "./read-raw-nodes.ts";
import { findSessionByKey, getSession, listSessions } from "./read-sessions.ts";
import { createScopeContext, type ScopeContext, type StoreServices } from "./scope-context.ts";
import { indexNeedsRebuild, listEntries, rebuildIndex } from "./scope-index.ts";
import { scopeStats } from "./scope-stats.ts";
import { searchLexical } from "./search-lexical.ts";
import { searchVectors } from "./search-vectors.ts";

/**
 * One scope's handle on the SQLite store. Each method delegates to the module of its job; every
 * statement those run binds this scope's key, so a foreign id looks exactly like a missing one.
 */
export class SqliteScopedStore implements ScopedStore {
  readonly scope: Scope;
  readonly #context: ScopeContext;

  constructor(db: Database, store: StoreServices, scope: Scope, key: string) {
    this.scope = scope;
    this.#context = createScopeContext(db, key, store);
  }

  async commitSession(write: SessionWrite): Promise<CommitResult> {
    return commitSession(this.#context, write);
  }

  async getSession(id: string): Promise<SessionRecord> {
    return getSession(this.#context, id);
  }

  async findSessionByKey(key: string): Promise<SessionRecord | null> {
    return findSessionByKey(this.#context, key);
  }

  async listSessions(options: { limit?: number; offset?: number } = {}): Promise<SessionRecord[]> {
    return listSessions(this.#context, options);
  }

  async getRawNode(id: string): Promise<RawNode> {
    return getRawNode(this.#context, id);
  }

  async getRawNodes(ids: readonly string[]): Promise<RawNode[]> {
    return getRawNodes(this.#context, ids);
  }

  async listRawNodes(options: { sessionId: string }): Promise<RawNode[]> {
    return listRawNodes(this.#context, options);
  }

  async getBlob(hash: string): Promise<{ record: BlobRecord; data: Uint8Array }> {
    return getBlob(this.#context, hash);
  }

  async getThumbnail(hash: string): Promise<Uint8Array> {
    return getThumbnail(this.#context, hash);
  }

  async searchLexical(
    field: LexicalField,
    query: string,
    options: { limit: number; filters?: SearchFilters },
  ): Promise<Ranked[]> {
    return searchLexical(this.#context, field, query, options);
  }

  async searchVectors(
    space: string,
    vector: Float32Array,
    options: { limit: number; filters?: SearchFilters },
  ): Promise<Ranked[]> {
    return searchVectors(this.#context, space, vector, options);
  }

  async listEntries(options: { limit?: number; offset?: number; status?: Entry["status"] } = {}): Promise<Entry[]> {
    return listEntries(this.#context, options);
  }

  async readIndex(options: { activeOnly: boolean }): Promise<IndexState> {
    return readIndex(this.#context.db, this.#context.key, options);
  }

  async indexVersion(): Promise<number> {
    return indexVersion(this.#context.db, this.#context.key);
  }

  async readLinkedEntries(options: {
    hosts: readonly string[];
    ids: readonly string[];
    nearest?: { vector: Float32Array; perHost: number };
  }): Promise<IndexEntry[]> {
    return linkedEntries(this.#context, options);
  }

  async indexNeedsRebuild(): Promise<boolean> {
    return indexNeedsRebuild(this.#context);
  }

  async rebuildIndex(plan: MaintenancePlan, spaces: { text: string; image: string | null }): Promise<void> {
    rebuildIndex(this.#context, plan, spaces);
  }

  async neighbours(rawNodeIds: readonly string[], window: number): Promise<Map<string, string>> {
    return neighbours(this.#context, rawNodeIds, window);
  }

  async getTextVectors(space: string, rawNodeIds: readonly string[]): Promise<Map<string, Float32Array>> {
    return textVectors(this.#context, space, rawNodeIds);
  }

  async forget(target: ForgetTarget): Promise<ForgetResult> {
    return forget(this.#context, target);
  }

  async listAudit(options: { limit?: number; offset?: number } = {}): Promise<AuditEvent[]> {
    return listAudit(this.#context, options);
  }

  async stats(): Promise<ScopeStats> {
    return scopeStats(this.#context);
  }

  async knownImages(
    hashes: readonly string[],
    imageSpace: string | null,
  ): Promise<Map<string, { vector: Float32Array | null; derivedText: string | null }>> {
    return knownImages(this.#context, hashes, imageSpace);
  }
}
