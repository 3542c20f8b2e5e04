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

/**
 * Tokens of each text, in order of `texts`. A text is cut at its ASCII characters other than letters
 * and digits, which `unicode61` always treats as separators (its ASCII token characters are exactly
 * `0-9A-Za-z` unless `tokenchars` adds some, and ours adds none), so a token never spans such a
 * character and the text's tokens are its pieces' tokens, in order: each distinct piece goes
 * through FTS5 once per process (`pieceCache`), and a text made of pieces already seen costs a
 * split and map lookups instead of an FTS5 insert and vocabulary read (ingest spent ~10% of its
 * time here). `tokenizeWhole` is the direct cut, for the test that holds the two equal.
 */
export function tokenizeTexts(texts: readonly string[]): DocumentTokens[] {
  const pieces = texts.map(piecesOf);
  const tokensOf = piecesTokens(pieces.flat());
  return pieces.map((list) => {
    const frequencies = new Map<string, number>();
    let length = 0;
    for (const piece of list) {
      for (const token of tokensOf.get(piece) ?? []) {
        frequencies.set(token, (frequencies.get(token) ?? 0) + 1);
        length++;
      }
    }
    return { frequencies, length };
  });
}

/** A run of ASCII separators (every ASCII character but letters and digits). */
const asciiSeparators = /[^0-9A-Za-z\u0080-\uffff]+/;

function piecesOf(text: string): string[] {
  return text.split(asciiSeparators).filter((piece) => piece.length > 0);
}

/** Each piece's tokens (usually one; none for a piece FTS5 ignores, several where non-ASCII separators cut it). */
const pieceCache = new Map<string, readonly string[]>();
/** Enough for a large vocabulary; past it the cache starts over (a piece costs one FTS5 cut again). */
const pieceCacheCapacity = 500_000;
/** Pieces cut per FTS5 round (see `textsPerRound`: a piece is about one token, a text about 70). */
const piecesPerRound = 512;

/** Longer pieces (a run of text in a script without ASCII separators, a long code) are cut every time, not kept. */
const maxKeptPieceLength = 64;

/**
 * The tokens of each distinct piece, for this call: kept ones from the cache, the rest cut now (and
 * kept if short enough). The answer is complete whether or not the cache starts over on the way.
 */
function piecesTokens(pieces: readonly string[]): Map<string, readonly string[]> {
  const tokensOf = new Map<string, readonly string[]>();
  const missing: string[] = [];
  for (const piece of new Set(pieces)) {
    const kept = pieceCache.get(piece);
    if (kept) tokensOf.set(piece, kept);
    else missing.push(piece);
  }
  if (missing.length === 0) return tokensOf;
  if (pieceCache.size + missing.length > pieceCacheCapacity) pieceCache.clear();
  const cut = cutInRounds(missing, piecesPerRound);
  missing.forEach((piece, index) => {
    // Only counts and length leave this module, so a piece's tokens are kept in any order.
    const frequencies = cut[index]?.frequencies ?? new Map<string, number>();
    const tokens = [...frequencies].flatMap(([token, count]) => Array.from({ length: count }, () => token));
    tokensOf.set(piece, tokens);
    if (piece.length <= maxKeptPieceLength) pieceCache.set(piece, tokens);
  });
  return tokensOf;
}

/** FTS5's own cut of each text, `perRound` texts a round. */
function cutInRounds(texts: readonly string[], perRound: number): DocumentTokens[] {
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

/** FTS5's cut of each whole text, `perRound` a round: what `tokenizeTexts` must equal (and `bench/perf/tokenize-rounds.ts`). */
export function tokenizeWhole(texts: readonly string[], perRound = textsPerRound): DocumentTokens[] {
  return cutInRounds(texts, perRound);
}

/** Query words' tokens, kept per process: the tokenizer never changes, and queries repeat words. */
const termCache = new Map<string, string | null>();
const termCacheCapacity = 50_000;

/**
 * The one token each query word stands for in the index, or null where FTS5 cuts the word into
 * none or several (a phrase query, which only FTS5's positions can answer).
 */
export function queryTokens(words: readonly string[]): (string | null)[] {
  const known = new Map<string, string | null>();
  const missing: string[] = [];
  for (const word of new Set(words)) {
    const kept = termCache.get(word);
    if (kept !== undefined) known.set(word, kept);
    else missing.push(word);
  }
  if (missing.length > 0) {
    const tokens = tokenizeWhole(missing);
    // Starting over drops words of this very call too: their answers are already in `known`.
    if (termCache.size + missing.length > termCacheCapacity) termCache.clear();
    missing.forEach((word, index) => {
      const frequencies = (tokens[index] as DocumentTokens).frequencies;
      const only = frequencies.size === 1 && (tokens[index] as DocumentTokens).length === 1;
      const token = only ? (frequencies.keys().next().value as string) : null;
      known.set(word, token);
      termCache.set(word, token);
    });
  }
  return words.map((word) => known.get(word) ?? null);
}
