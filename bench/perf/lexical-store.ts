/**
 * A store for the BM25 pass alone at sizes a full perf run takes hours to ingest (1M raw nodes): the perf
 * corpus's turns written straight as sessions, raw nodes and FTS rows, with Cairn's lexical index built
 * as commits build it (`indexDocuments`, one batch of 2,000 rows a transaction), and no vectors, no
 * maintenance. `bench/perf/lexical-index.ts` then compares the two passes on it:
 *
 *   npx tsx bench/perf/lexical-store.ts /tmp/lex-1m 1000000
 *   npx tsx bench/perf/lexical-index.ts /tmp/lex-1m --queries 100
 */
import { rmSync } from "node:fs";
import { scopeKey } from "../../src/core/scope.ts";
import { lexicalDocument } from "../../src/store/lexical-text.ts";
import { indexDocuments, lexicalTables } from "../../src/store/sqlite/lexical-index.ts";
import { scopeTokenOf } from "../../src/store/sqlite/scope-context.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { ensureTenant } from "../../src/store/sqlite/tenants.ts";
import { generateSessions } from "./corpus.ts";
import { scope } from "./run-config.ts";

const path = process.argv[2];
const size = Number(process.argv[3] ?? 1_000_000);
if (!path || !Number.isInteger(size) || size <= 0) throw new Error("usage: lexical-store.ts <new folder> <raw nodes>");
rmSync(path, { recursive: true, force: true });
const store = await SqliteStore.open({ path });
const { db } = store;
const key = scopeKey(scope);
const token = scopeTokenOf(key);
const storage = db.transaction(() => ensureTenant(db, scope.tenant)).immediate();
const tables = lexicalTables(storage, "text");
const insertSession = db.prepare(
  `INSERT INTO sessions (id, scope_key, session_key, time_ms, source, content_hash, turn_count, image_count, created_ms)
   VALUES (?, ?, ?, ?, NULL, ?, ?, 0, ?)`,
);
const insertNode = db.prepare(
  `INSERT INTO raw_nodes (id, scope_key, session_rowid, turn, speaker, role, text, time_ms, source, uri, metadata)
   VALUES (?, ?, ?, ?, ?, NULL, ?, ?, NULL, NULL, '{}')`,
);
const insertText = db.prepare(`INSERT INTO ${storage.textTable} (rowid, body) VALUES (?, ?)`);
const started = performance.now();
const cpuBefore = process.cpuUsage();
let written = 0;
let pending: { rowid: number; scopeKey: string; body: string }[] = [];
const flush = () => {
  const documents = pending;
  pending = [];
  return documents;
};
let sessionIndex = 0;
const write = db.transaction((sessions: { timeMs: number; turns: { text?: string; speaker?: string }[] }[]) => {
  for (const session of sessions) {
    const sessionRowid = Number(
      insertSession.run(
        `ses_${sessionIndex}`,
        key,
        `s${sessionIndex}`,
        session.timeMs,
        `h${sessionIndex}`,
        session.turns.length,
        0,
      ).lastInsertRowid,
    );
    sessionIndex++;
    for (const [turn, input] of session.turns.entries()) {
      const text = input.text ?? "";
      const rowid = Number(
        insertNode.run(`rn_${written}`, key, sessionRowid, turn, input.speaker ?? null, text, session.timeMs)
          .lastInsertRowid,
      );
      const body = `${token} ${lexicalDocument(text)}`;
      insertText.run(BigInt(rowid), body);
      pending.push({ rowid, scopeKey: key, body });
      written++;
    }
  }
  indexDocuments(db, tables, flush());
});
let batch: { timeMs: number; turns: { text?: string; speaker?: string }[] }[] = [];
let batchTurns = 0;
for (const session of generateSessions({ rawNodes: size, imageShare: 0 }, [])) {
  batch.push({
    timeMs: Date.parse(String(session.time)),
    turns: session.turns as { text?: string; speaker?: string }[],
  });
  batchTurns += session.turns.length;
  if (batchTurns >= 2000) {
    write.immediate(batch);
    batch = [];
    batchTurns = 0;
    if (written % 100_000 < 2000)
      console.error(`${written} rows, ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
}
if (batch.length > 0) write.immediate(batch);
const cpu = process.cpuUsage(cpuBefore);
console.log(
  JSON.stringify({
    path,
    rawNodes: written,
    seconds: (performance.now() - started) / 1000,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
  }),
);
await store.close();
