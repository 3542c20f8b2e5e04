/**
 * How text becomes lexical terms. Documents and queries both go through PostgreSQL's `english`
 * text search configuration (Snowball English stemmer, English stop words): the closest match to
 * the SQLite store's FTS5 `porter` tokenizer, so the same words meet the same stems on both
 * backends ("zebras" finds "zebra"). `simple` would miss every inflection.
 */
export const textSearchConfig = "english";

/** BM25's parameters, as FTS5's `bm25()` uses them by default. */
export const bm25 = { k1: 1.2, b: 0.75 } as const;

const stopwords = new Set(
  "a an and are as at be but by did do does for from had has have he her him his how i if in into is it its me my of on or our she so that the their them they this to was we were what when where which who whom why will with you your".split(
    " ",
  ),
);

/**
 * The words of a query worth matching, at most `maxTerms`, as plain text for `to_tsvector`. User
 * text is never parsed as query syntax: only letters and digits survive. As in the SQLite store,
 * very common words and single letters are dropped unless nothing else is left.
 */
export function queryWords(text: string, maxTerms = 32): string | null {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const kept = [...new Set(words.filter((word) => !stopwords.has(word) && !/^\p{L}$/u.test(word)))].slice(0, maxTerms);
  const terms = kept.length > 0 ? kept : [...new Set(words)].slice(0, maxTerms);
  return terms.length > 0 ? terms.join(" ") : null;
}
