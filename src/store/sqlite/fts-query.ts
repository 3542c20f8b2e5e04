/**
 * Turns free text into an FTS5 MATCH expression: every word quoted (so user text can never
 * be parsed as FTS syntax) and OR-ed, letting BM25 weigh them. Very common words are dropped
 * because under OR they would match nearly every row and only slow the query down.
 */
const stopwords = new Set(
  "a an and are as at be but by did do does for from had has have he her him his how i if in into is it its me my of on or our she so that the their them they this to was we were what when where which who whom why will with you your".split(
    " ",
  ),
);

export function toMatchExpression(text: string, maxTerms = 32): string | null {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  // Single letters are mostly contraction and possessive debris ("Ana's" → "ana" "s", "I'm" → "i" "m"):
  // they match a tenth of a conversation corpus and only slow BM25 down.
  const kept = [...new Set(words.filter((word) => !stopwords.has(word) && !/^\p{L}$/u.test(word)))].slice(0, maxTerms);
  const terms = kept.length > 0 ? kept : [...new Set(words)].slice(0, maxTerms);
  if (terms.length === 0) return null;
  return terms.map((term) => `"${term}"`).join(" OR ");
}
