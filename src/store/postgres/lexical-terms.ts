import { b, k1 } from "../lexical-block-max.ts";
import { queryTerms } from "../query-terms.ts";
import { queryTokens, tokenizeTexts } from "../sqlite/lexical-tokens.ts";

/*
 * How text becomes lexical terms on Postgres: exactly as the SQLite store cuts it (decision 037),
 * by FTS5's own `porter unicode61 remove_diacritics 2` tokenizer in a private in-memory SQLite
 * database of this thread (`tokenizeTexts`). The stores then hold the same terms, frequencies and
 * lengths for the same text, and BM25 ranks alike on both. The server only stores and counts what
 * it is given.
 */

/**
 * The longest term kept, in UTF-8 bytes: a B-tree entry of `lexical_terms` or `lexical_blocks` holds at
 * most about a third of a page, so a longer token (a run of base64 in a pasted blob) could not be
 * stored. Such a token is no word anyone searches for; it is dropped from the document, its length
 * included, as PostgreSQL's own parser dropped words over 2,047 bytes before decision 037.
 */
export const maxTermBytes = 2047;

/** BM25's parameters: the block-max walk's (FTS5's defaults), so the exhaustive SQL pass scores alike. */
export const bm25 = { k1, b } as const;

/** A document's terms (sorted), each one's frequency in step, and its length: the sum of the frequencies. */
export interface DocumentTerms {
  readonly terms: string[];
  readonly tfs: number[];
  readonly length: number;
}

/** The terms of each body, in order of `bodies`. */
export function documentTerms(bodies: readonly string[]): DocumentTerms[] {
  return tokenizeTexts(bodies).map(({ frequencies }) => {
    const terms = [...frequencies.keys()].filter((term) => Buffer.byteLength(term) <= maxTermBytes).sort();
    const tfs = terms.map((term) => frequencies.get(term) as number);
    return { terms, tfs, length: tfs.reduce((sum, tf) => sum + tf, 0) };
  });
}

/**
 * The distinct terms a query searches for: its words worth matching (`queryTerms`, the same on every
 * backend), each as the token FTS5 makes of it — or, for a word FTS5 cuts into several, each of them.
 */
export function queryLexemes(text: string, maxTerms = 32): string[] {
  const words = queryTerms(text, maxTerms);
  if (words.length === 0) return [];
  const single = queryTokens(words);
  const lexemes = new Set<string>();
  words.forEach((word, index) => {
    const token = single[index];
    if (token !== null && token !== undefined) lexemes.add(token);
    else for (const each of documentTerms([word])[0]?.terms ?? []) lexemes.add(each);
  });
  return [...lexemes];
}
