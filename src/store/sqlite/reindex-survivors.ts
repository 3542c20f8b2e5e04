import { IndexVersionConflict } from "../index-records.ts";
import { lexicalDocument } from "../lexical-text.ts";
import type { RawNodeReindex } from "../records.ts";
import {
  ftsDocuments,
  indexDocuments,
  type LexicalDocument,
  lexicalTables,
  unindexDocuments,
} from "./lexical-index.ts";
import type { ScopeContext } from "./scope-context.ts";
import { statement } from "./statements.ts";
import type { TenantStorage } from "./tenants.ts";
import { plainTableOf, type SpaceRow, type VectorRow } from "./vector-rows.ts";

/** A surviving raw node's row as the re-derivation needs it. */
interface SurvivorRow {
  readonly id: string;
  readonly rowid: number;
  readonly session_rowid: number;
  readonly time_ms: number;
  readonly speaker: string | null;
}

/**
 * Inside a forget's transaction: the surviving raw nodes whose index text quoted forgotten ones get
 * their text FTS row and their text vectors (vec0 row and plain copy) written again from `reindex`.
 * A raw node that is not in the scope, or is being forgotten, means the plan was made against
 * another state: `IndexVersionConflict`, so the caller plans again. FTS5's secure-delete and vec0's
 * zeroed slots leave nothing of the old rows. Returns the vector rows removed and written, for the
 * loaded ANN indexes once the transaction commits.
 */
export function reindexSurvivors(
  context: ScopeContext,
  tenant: TenantStorage | undefined,
  reindex: readonly RawNodeReindex[],
  forgotten: ReadonlySet<string>,
  spaces: readonly SpaceRow[],
  version: number,
): { removed: { table: string; rowids: number[] }[]; inserted: VectorRow[] } {
  const removed: { table: string; rowids: number[] }[] = [];
  const inserted: VectorRow[] = [];
  if (reindex.length === 0) return { removed, inserted };
  const { db, key, scopeToken } = context;
  const rows = statement(
    db,
    `SELECT id, rowid, session_rowid, time_ms, speaker FROM raw_nodes
       WHERE scope_key = ? AND id IN (SELECT value FROM json_each(?))`,
  ).all(key, JSON.stringify(reindex.map((node) => node.rawNodeId))) as SurvivorRow[];
  const byId = new Map(rows.map((row) => [row.id, row]));
  const stale = reindex.some((node) => !byId.has(node.rawNodeId) || forgotten.has(node.rawNodeId));
  if (stale || !tenant) throw new IndexVersionConflict(version, version);
  const tables = new Map(spaces.filter((space) => space.kind === "text").map((space) => [space.name, space]));
  const deleteText = statement(db, `DELETE FROM ${tenant.textTable} WHERE rowid = ?`);
  const insertText = statement(db, `INSERT INTO ${tenant.textTable} (rowid, body) VALUES (?, ?)`);
  const removedBy = new Map<string, number[]>();
  const lexical = lexicalTables(tenant, "text");
  // The lexical index takes every survivor at once (one rewrite per term, not one per node), reading
  // the old bodies before FTS5 loses them.
  const survivorRowids = reindex.map((node) => (byId.get(node.rawNodeId) as SurvivorRow).rowid);
  unindexDocuments(db, lexical, ftsDocuments(db, lexical, key, survivorRowids));
  const rewritten: LexicalDocument[] = [];
  for (const node of reindex) {
    const row = byId.get(node.rawNodeId) as SurvivorRow;
    deleteText.run(BigInt(row.rowid));
    const body = `${scopeToken} ${lexicalDocument(node.indexText)}`;
    insertText.run(BigInt(row.rowid), body);
    rewritten.push({ rowid: row.rowid, scopeKey: key, body });
    for (const [name, vector] of Object.entries(node.textVectors)) {
      const space = tables.get(name);
      // A space the node has no vector table for cannot hold a stale vector: nothing to replace.
      if (!space) continue;
      const table = space.table_name;
      // Statements from the connection's cache: a forget re-derives every neighbour of what it removed.
      statement(db, `DELETE FROM ${table} WHERE rowid = ?`).run(BigInt(row.rowid));
      statement(db, `DELETE FROM ${plainTableOf(table)} WHERE rowid = ?`).run(row.rowid);
      statement(
        db,
        `INSERT INTO ${table} (rowid, scope_key, session_rowid, time_ms, speaker, embedding) VALUES (?, ?, ?, ?, ?, ?)`,
      ).run(BigInt(row.rowid), key, BigInt(row.session_rowid), BigInt(row.time_ms), row.speaker ?? "", vector);
      statement(db, `INSERT INTO ${plainTableOf(table)} (rowid, embedding) VALUES (?, ?)`).run(row.rowid, vector);
      removedBy.set(table, [...(removedBy.get(table) ?? []), row.rowid]);
      inserted.push({ table, rowid: row.rowid, vector });
    }
  }
  indexDocuments(db, lexical, rewritten);
  for (const [table, rowids] of removedBy) removed.push({ table, rowids });
  return { removed, inserted };
}
