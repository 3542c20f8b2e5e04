import type { Database } from "better-sqlite3";
import { hasCjk, lexicalDocument } from "../lexical-text.ts";
import { scopeTokenOf } from "./scope-context.ts";
import { tenantOfKey, tenantStorage } from "./tenants.ts";

/**
 * Migration 8: rows written before CJK runs were indexed as bigrams (`lexical-text.ts`) are
 * indexed again, so Chinese and Japanese text already stored is found like new text. Only rows
 * holding a CJK character change (their FTS rows are deleted, securely, and inserted again); the
 * raw nodes themselves are only read. Pages of raw nodes keep memory flat on a large store.
 */
export function reindexCjk(db: Database): void {
  const page = 2000;
  const readNodes = db.prepare("SELECT rowid, scope_key, text FROM raw_nodes WHERE rowid > ? ORDER BY rowid LIMIT ?");
  const readImages = db.prepare(
    `SELECT raw_node_rowid, caption, derived_text FROM raw_node_images
     WHERE raw_node_rowid BETWEEN ? AND ? ORDER BY raw_node_rowid, ordinal`,
  );
  let after = 0;
  for (;;) {
    const nodes = readNodes.all(after, page) as { rowid: number; scope_key: string; text: string }[];
    const last = nodes.at(-1);
    if (!last) return;
    const imageTexts = new Map<number, string[]>();
    for (const image of readImages.all(nodes[0]?.rowid ?? 0, last.rowid) as {
      raw_node_rowid: number;
      caption: string | null;
      derived_text: string | null;
    }[]) {
      const parts = imageTexts.get(image.raw_node_rowid) ?? [];
      parts.push([image.caption, image.derived_text].filter(Boolean).join(" "));
      imageTexts.set(image.raw_node_rowid, parts);
    }
    for (const node of nodes) {
      const storage = tenantStorage(tenantOfKey(node.scope_key));
      const token = scopeTokenOf(node.scope_key);
      const imageText = (imageTexts.get(node.rowid) ?? []).join(" ");
      for (const [table, text] of [
        [storage.textTable, node.text],
        [storage.imageTextTable, imageText],
      ] as const) {
        if (!hasCjk(text)) continue;
        db.prepare(`DELETE FROM ${table} WHERE rowid = ?`).run(BigInt(node.rowid));
        db.prepare(`INSERT INTO ${table} (rowid, body) VALUES (?, ?)`).run(
          BigInt(node.rowid),
          `${token} ${lexicalDocument(text)}`,
        );
      }
    }
    after = last.rowid;
  }
}
