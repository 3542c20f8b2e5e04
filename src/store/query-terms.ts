/**
 * The words of a lexical query worth matching, the same on every backend: lower-cased runs of
 * letters and digits (user text is never parsed as query syntax), without very common words and
 * single letters — under OR they match nearly every row and only slow ranking down ("Ana's" →
 * "ana" "s") — unless nothing else is left; at most `maxTerms`, first occurrence first.
 */
const stopwords = new Set(
  "a an and are as at be but by did do does for from had has have he her him his how i if in into is it its me my of on or our she so that the their them they this to was we were what when where which who whom why will with you your".split(
    " ",
  ),
);

export function queryTerms(text: string, maxTerms = 32): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const kept = [...new Set(words.filter((word) => !stopwords.has(word) && !/^\p{L}$/u.test(word)))].slice(0, maxTerms);
  return kept.length > 0 ? kept : [...new Set(words)].slice(0, maxTerms);
}
