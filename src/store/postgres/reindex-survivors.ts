import { IndexVersionConflict } from "../index-records.ts";
import { lexicalDocument } from "../lexical-text.ts";
import type { RawNodeReindex } from "../records.ts";
import { insertLexicalDocuments } from "./lexical-documents.ts";
import { addLexicalStatistics } from "./lexical-statistics.ts";
import { documentTerms } from "./lexical-terms.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";
import { textOrdinal, vectorLiteral } from "./vector-spaces.ts";

/**
 * The surviving raw nodes a forget re-derives, checked inside its transaction (after the index
 * lock): each must be a raw node of the scope that the forget keeps, or the plan was made against
 * another state (`IndexVersionConflict`, so the caller plans again). Returns their rowids by id.
 */
export async function survivorRowids(
  context: ScopeContext,
  sql: Sql,
  reindex: readonly RawNodeReindex[],
  forgotten: ReadonlyMap<string, number>,
  version: number,
): Promise<Map<string, number>> {
  if (reindex.length === 0) return new Map();
  const rows = await sql.query<{ id: string; rowid: number }>(
    "SELECT id, rowid FROM raw_nodes WHERE scope_key = $1 AND id = ANY($2::text[])",
    [context.key, reindex.map((node) => node.rawNodeId)],
  );
  const byId = new Map(rows.map((row) => [row.id, Number(row.rowid)]));
  if (reindex.some((node) => !byId.has(node.rawNodeId) || forgotten.has(node.rawNodeId))) {
    throw new IndexVersionConflict(version, version);
  }
  return byId;
}

/**
 * Locks, in the order every writer of the tenant takes them (field, lexeme), the statistics rows a
 * forget with re-derivation changes: the terms of the documents it removes (forgotten and survivors')
 * and of the survivors' new text documents. A forget that took the removed terms first and the new
 * ones later could wait on a commit that waits on it; taken together and sorted, it cannot.
 */
export async function lockReindexTerms(
  context: ScopeContext,
  sql: Sql,
  rowids: readonly number[],
  reindex: readonly RawNodeReindex[],
): Promise<void> {
  if (reindex.length === 0) return;
  const newTerms = [
    ...new Set(documentTerms(reindex.map((node) => lexicalDocument(node.indexText))).flatMap((each) => each.terms)),
  ];
  await sql.query(
    `SELECT 1 FROM lexical_terms t JOIN (
       SELECT d.field, u.lexeme FROM lexical_docs d, unnest(d.terms) AS u (lexeme) WHERE d.raw_node_rowid = ANY($2::bigint[])
       UNION
       SELECT 'text', u.lexeme FROM unnest($3::text[]) AS u (lexeme)
     ) r ON t.field = r.field AND t.lexeme = r.lexeme
     WHERE t.tenant = $1 ORDER BY t.field, t.lexeme FOR UPDATE OF t`,
    [context.tenant, rowids, newTerms],
  );
}

/**
 * Inside a forget's transaction: the surviving raw nodes whose index text quoted forgotten ones get
 * their text lexical document and their text vectors written again from `reindex`. Call it after
 * `removeLexicalStatistics` has taken these rowids' documents (both fields) out of the tenant's
 * statistics: it puts them back, with the new text document, in the order commits take the rows.
 */
export async function reindexSurvivors(
  context: ScopeContext,
  sql: Sql,
  reindex: readonly RawNodeReindex[],
  rowids: ReadonlyMap<string, number>,
): Promise<void> {
  if (reindex.length === 0) return;
  const rowidOf = (node: RawNodeReindex) => rowids.get(node.rawNodeId) as number;
  const all = reindex.map(rowidOf);
  // The documents' postings go with them (migration 11's trigger).
  await sql.query("DELETE FROM lexical_docs WHERE field = 'text' AND raw_node_rowid = ANY($1::bigint[])", [all]);
  await insertLexicalDocuments(sql, context, {
    rowids: all,
    fields: reindex.map(() => "text"),
    bodies: reindex.map((node) => lexicalDocument(node.indexText)),
  });
  await addLexicalStatistics(context, sql, all);
  const spaces = new Map(
    (await context.store.spaces.all(sql)).filter((space) => space.kind === "text").map((space) => [space.name, space]),
  );
  const bySpace = new Map<string, { rowids: number[]; vectors: string[] }>();
  for (const node of reindex) {
    for (const [name, vector] of Object.entries(node.textVectors)) {
      // A space with no table holds no stale vector of this node: nothing to replace.
      if (!spaces.has(name)) continue;
      const columns = bySpace.get(name) ?? { rowids: [], vectors: [] };
      columns.rowids.push(rowidOf(node));
      columns.vectors.push(vectorLiteral(vector));
      bySpace.set(name, columns);
    }
  }
  for (const [name, columns] of bySpace) {
    const space = spaces.get(name);
    if (!space) continue;
    await sql.query(
      `DELETE FROM ${space.table_name} WHERE scope_key = $1 AND ordinal = $2 AND raw_node_rowid = ANY($3::bigint[])`,
      [context.key, textOrdinal, columns.rowids],
    );
    await sql.query(
      `INSERT INTO ${space.table_name} (raw_node_rowid, ordinal, tenant, scope_key, session_rowid, time_ms, speaker, embedding)
       SELECT r.rowid, $3, $1, $2, r.session_rowid, r.time_ms, r.speaker, v.embedding::vector(${space.dimensions})
       FROM unnest($4::bigint[], $5::text[]) AS v (rowid, embedding)
       JOIN raw_nodes r ON r.rowid = v.rowid AND r.scope_key = $2`,
      [context.tenant, context.key, textOrdinal, columns.rowids, columns.vectors],
    );
  }
}
