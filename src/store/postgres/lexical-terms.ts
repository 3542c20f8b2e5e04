import { b, k1 } from "../lexical-block-max.ts";
import { queryTerms } from "../query-terms.ts";

/**
 * How text becomes lexical terms. Documents and queries both go through PostgreSQL's `english`
 * text search configuration (Snowball English stemmer, English stop words): the closest match to
 * the SQLite store's FTS5 `porter` tokenizer, so the same words meet the same stems on both
 * backends ("zebras" finds "zebra"). `simple` would miss every inflection.
 */
export const textSearchConfig = "english";

/** BM25's parameters: the block-max walk's (FTS5's defaults), so the exhaustive SQL pass scores alike. */
export const bm25 = { k1, b } as const;

/** The words of a query worth matching (see `queryTerms`), as plain text for `to_tsvector`. */
export function queryWords(text: string, maxTerms = 32): string | null {
  const terms = queryTerms(text, maxTerms);
  return terms.length > 0 ? terms.join(" ") : null;
}
