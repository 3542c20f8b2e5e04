import { splitQueryWord } from "./lexical-text.ts";

/**
 * The words of a lexical query worth matching, the same on every backend: lower-cased runs of
 * letters and digits (user text is never parsed as query syntax), without very common words and
 * single letters — under OR they match nearly every row and only slow ranking down ("Ana's" →
 * "ana" "s") — unless nothing else is left; at most `maxTerms`, first occurrence first. Chinese,
 * Japanese and Korean runs become their bigrams (`lexical-text.ts`), which the index holds.
 */
const stopwords = new Set(
  "a an and are as at be but by did do does for from had has have he her him his how i if in into is it its me my of on or our she so that the their them they this to was we were what when where which who whom why will with you your".split(
    " ",
  ),
);

export function queryTerms(text: string, maxTerms = 32): string[] {
  const words: string[] = [];
  const kept: string[] = [];
  for (const run of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const split = splitQueryWord(run);
    for (const word of split.words) {
      words.push(word);
      if (!stopwords.has(word) && !/^\p{L}$/u.test(word)) kept.push(word);
    }
    // A CJK character or pair is a word in its own right: never a stop word or a stray letter.
    words.push(...split.cjk);
    kept.push(...split.cjk);
  }
  const unique = [...new Set(kept)].slice(0, maxTerms);
  return unique.length > 0 ? unique : [...new Set(words)].slice(0, maxTerms);
}
