import { contextualTexts, defaultIndexTextConfig, imagesText } from "../index-text.ts";
import { lexicalDocument } from "../lexical-text.ts";
import { insertLexicalDocuments } from "./lexical-documents.ts";
import { addLexicalStatistics } from "./lexical-statistics.ts";
import { forEachTenant, type Sql } from "./tenant-transaction.ts";

/** Sessions whose documents are made again per statement: bounds the migration's memory, not its work. */
const sessionsPerBatch = 500;

interface NodeRow {
  rowid: string;
  scope_key: string;
  session_rowid: string;
  speaker: string | null;
  text: string;
  time_ms: string;
  captions: (string | null)[];
  derived: (string | null)[];
}

/**
 * Migration 13 (decision 037): every stored lexical document is cut again by FTS5's tokenizer, as
 * the SQLite store cuts it, where PostgreSQL's `english` configuration cut it before. A document's
 * body is not stored, so it is made again from its raw node as a write makes it: the text field
 * from the turn's index text with the default settings (`contextualTexts`: speaker, date,
 * neighbours, images — what `cairn migrate` writes too), the image field from its images' captions
 * and read text. The lexical tables are emptied first (TRUNCATE: every tenant's rows at once,
 * without the delete triggers' block rewrites), then filled tenant by tenant inside its wall,
 * statistics included. Raw nodes are only read.
 */
export async function documentsCutAgain(sql: Sql): Promise<void> {
  await sql.query("TRUNCATE lexical_blocks, lexical_docs, lexical_terms, lexical_stats");
  await forEachTenant(sql, async (tenant) => {
    let after = 0;
    for (;;) {
      const sessions = (
        await sql.query<{ rowid: string }>("SELECT rowid FROM sessions WHERE rowid > $1 ORDER BY rowid LIMIT $2", [
          after,
          sessionsPerBatch,
        ])
      ).map((row) => Number(row.rowid));
      if (sessions.length === 0) return;
      after = sessions.at(-1) as number;
      const nodes = await sql.query<NodeRow>(
        `SELECT r.rowid, r.scope_key, r.session_rowid, r.speaker, r.text, r.time_ms,
           coalesce(array_agg(i.caption ORDER BY i.ordinal) FILTER (WHERE i.ordinal IS NOT NULL), '{}') AS captions,
           coalesce(array_agg(i.derived_text ORDER BY i.ordinal) FILTER (WHERE i.ordinal IS NOT NULL), '{}') AS derived
         FROM raw_nodes r LEFT JOIN raw_node_images i ON i.raw_node_rowid = r.rowid
         WHERE r.session_rowid = ANY($1::bigint[])
         GROUP BY r.rowid ORDER BY r.session_rowid, r.turn`,
        [sessions],
      );
      await writeDocuments(sql, tenant, nodes);
    }
  });
}

/** The documents of whole sessions' raw nodes (in session and turn order), scope by scope, with their statistics. */
async function writeDocuments(sql: Sql, tenant: string, nodes: readonly NodeRow[]): Promise<void> {
  const bySession = new Map<string, NodeRow[]>();
  for (const node of nodes) {
    const turns = bySession.get(node.session_rowid);
    if (turns) turns.push(node);
    else bySession.set(node.session_rowid, [node]);
  }
  const byScope = new Map<string, { rowids: number[]; fields: string[]; bodies: string[] }>();
  for (const turns of bySession.values()) {
    const images = turns.map((node) =>
      node.captions.map((caption, index) => ({ caption, derivedText: node.derived[index] ?? null })),
    );
    const indexTexts = contextualTexts(
      turns.map((node, index) => ({
        speaker: node.speaker,
        text: node.text,
        imageText: imagesText(images[index] ?? []),
        timeMs: Number(node.time_ms),
      })),
      defaultIndexTextConfig,
    );
    turns.forEach((node, index) => {
      const documents = byScope.get(node.scope_key) ?? { rowids: [], fields: [], bodies: [] };
      documents.rowids.push(Number(node.rowid));
      documents.fields.push("text");
      documents.bodies.push(lexicalDocument(indexTexts[index] ?? ""));
      // As a commit writes the image field: each image's caption and read text, space-separated.
      const imageText = (images[index] ?? [])
        .map((image) => [image.caption, image.derivedText].filter(Boolean).join(" "))
        .join(" ");
      if (imageText.trim()) {
        documents.rowids.push(Number(node.rowid));
        documents.fields.push("imageText");
        documents.bodies.push(lexicalDocument(imageText));
      }
      byScope.set(node.scope_key, documents);
    });
  }
  for (const [key, documents] of byScope) {
    await insertLexicalDocuments(sql, { tenant, key }, documents);
    await addLexicalStatistics({ tenant }, sql, [...new Set(documents.rowids)]);
  }
}
