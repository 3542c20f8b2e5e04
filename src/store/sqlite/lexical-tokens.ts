import BetterSqlite3, { type Database } from "better-sqlite3";
import { statement } from "./statements.ts";

/**
 * Text cut into tokens exactly as the tenant FTS5 tables cut it (decision 030): by FTS5 itself, with
 * the same tokenizer, in a contentless table of a private in-memory database of this thread (each
 * read worker has its own). A copy of `unicode61` and of FTS5's Porter stemmer in TypeScript would
 * drift from SQLite's (Unicode tables, stemmer corner cases) and BM25 would stop being FTS5's. Not
 * the store's connection: cutting a query's new word would count as a change there
 * (`total_changes()`), and the BM25 walk drops its kept block bounds on any change of its connection.
 * Both stores cut text here (decision 037). The table is emptied after every use.
 */
export const ftsTokenizer = "porter unicode61 remove_diacritics 2";

const table = "temp.cairn_lexical_tokens";
const vocabulary = "temp.cairn_lexical_tokens_instances";

let tokenizer: Database | undefined;

function tokenizerDb(): Database {
  if (!tokenizer) {
    tokenizer = new BetterSqlite3(":memory:");
    ensureTokenizer(tokenizer);
  }
  return tokenizer;
}

function ensureTokenizer(db: Database): void {
  db.exec(
    `CREATE VIRTUAL TABLE IF NOT EXISTS ${table} USING fts5 (body, tokenize = '${ftsTokenizer}', content = '', columnsize = 0);
     CREATE VIRTUAL TABLE IF NOT EXISTS ${vocabulary} USING fts5vocab (temp, cairn_lexical_tokens, instance);`,
  );
}

/** A document's distinct tokens with their frequencies, and its length in tokens (FTS5's column size). */
export interface DocumentTokens {
  readonly frequencies: Map<string, number>;
  readonly length: number;
}

/**
 * Texts cut per round: FTS5 reads its `instance` view back in term order over everything the table
 * holds, which costs more per text as the table grows (`bench/perf/tokenize-rounds.ts`, three quiet
 * runs: 110–143 µs of CPU a 70-token text in rounds of 32 against 139–169 in one round of 640), so a
 * large batch goes through in small rounds.
 */
const textsPerRound = 32;

/** Tokens of each text, in order of `texts`; `perRound` only for `bench/perf/tokenize-rounds.ts`. */
export function tokenizeTexts(texts: readonly string[], perRound = textsPerRound): DocumentTokens[] {
  const result = texts.map(() => ({ frequencies: new Map<string, number>(), length: 0 }));
  if (texts.length === 0) return result;
  const db = tokenizerDb();
  const insert = statement(db, `INSERT INTO ${table} (rowid, body) VALUES (?, ?)`);
  const read = statement(db, `SELECT term, doc FROM ${vocabulary}`, "raw");
  const empty = statement(db, `INSERT INTO ${table} (cairn_lexical_tokens) VALUES ('delete-all')`);
  for (let start = 0; start < texts.length; start += perRound) {
    try {
      for (let index = start; index < Math.min(start + perRound, texts.length); index++) {
        insert.run(index + 1, texts[index]);
      }
      for (const [term, doc] of read.all() as [string, number][]) {
        const entry = result[doc - 1] as { frequencies: Map<string, number>; length: number };
        entry.frequencies.set(term, (entry.frequencies.get(term) ?? 0) + 1);
        entry.length++;
      }
    } finally {
      empty.run();
    }
  }
  return result;
}

/** Query words' tokens, kept per process: the tokenizer never changes, and queries repeat words. */
const termCache = new Map<string, string | null>();
const termCacheCapacity = 50_000;

/**
 * The one token each query word stands for in the index, or null where FTS5 cuts the word into
 * none or several (a phrase query, which only FTS5's positions can answer).
 */
export function queryTokens(words: readonly string[]): (string | null)[] {
  const missing = [...new Set(words.filter((word) => !termCache.has(word)))];
  if (missing.length > 0) {
    const tokens = tokenizeTexts(missing);
    if (termCache.size + missing.length > termCacheCapacity) termCache.clear();
    missing.forEach((word, index) => {
      const frequencies = (tokens[index] as DocumentTokens).frequencies;
      const only = frequencies.size === 1 && (tokens[index] as DocumentTokens).length === 1;
      termCache.set(word, only ? (frequencies.keys().next().value as string) : null);
    });
  }
  return words.map((word) => termCache.get(word) ?? null);
}
