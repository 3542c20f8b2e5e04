import { cjkBigrams } from "../store/lexical-text.ts";
import { queryTerms } from "../store/query-terms.ts";

/**
 * A relevance score comparable across queries (issue 16, part 6; docs/decisions/017): the share of
 * the query's content words that a piece of evidence holds, in [0, 1]. RRF scores and BM25 are not
 * comparable from one query to the next — RRF gives the first rank of any list the same score, and
 * BM25 grows with the number and rarity of a query's terms — so neither can carry a fixed cut. A
 * share of the query's words means the same for every query ("holds half of what was asked about"),
 * needs no model (so it is the same for every profile and both stores) and is cheap to compute on
 * the few dozen candidates a search packs.
 *
 * Words are compared as the lexical channel compares them, loosely: the query's words as
 * `queryTerms` keeps them (stop words and stray letters out; Chinese, Japanese and Korean as
 * character pairs), each reduced by a light English suffix rule, and a word also matches a longer
 * one it begins (photograph → photography) when it has at least five letters.
 */

/** The query's content words, reduced; empty for a query without words (an image alone). */
export function relevanceTerms(queryText: string): string[] {
  return [...new Set(queryTerms(queryText).map(reduce))];
}

/** The share of `terms` that `text` holds; null when there are no terms to hold. */
export function termCoverage(terms: readonly string[], text: string): number | null {
  if (terms.length === 0) return null;
  const words = documentWords(text);
  let held = 0;
  for (const term of terms) if (words.has(term) || holdsByPrefix(words, term)) held++;
  return held / terms.length;
}

const cjkRun = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3005\u3007\u30fc\uff70]+/u;
/** Splits a run into its CJK and other parts, keeping both; compiled once (it ran for every word of every candidate). */
const cjkSplit = new RegExp(`(${cjkRun.source})`, "u");

function documentWords(text: string): Set<string> {
  const words = new Set<string>();
  for (const run of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (!cjkRun.test(run)) {
      words.add(reduce(run));
      continue;
    }
    for (const part of run.split(cjkSplit)) {
      if (!part) continue;
      if (cjkRun.test(part)) {
        for (const character of part) words.add(character);
        for (const pair of cjkBigrams(part)) words.add(pair);
      } else {
        words.add(reduce(part));
      }
    }
  }
  return words;
}

function holdsByPrefix(words: ReadonlySet<string>, term: string): boolean {
  if (term.length < 5) return false;
  for (const word of words) if (word.length > term.length && word.startsWith(term)) return true;
  return false;
}

/**
 * A light English suffix rule, the same on both sides: plural, -ing and -ed come off, then a
 * doubled final consonant and a final e, so "hike", "hikes", "hiking" and "hiked" all meet as "hik".
 */
function reduce(word: string): string {
  if (!/^[a-z]+$/.test(word) || word.length < 4) return word;
  let stem = word;
  if (/ie[sd]$/.test(stem)) stem = `${stem.slice(0, -3)}y`;
  else if (stem.endsWith("ing") && stem.length >= 6) stem = undouble(stem.slice(0, -3));
  else if (stem.endsWith("ed") && stem.length >= 5) stem = undouble(stem.slice(0, -2));
  else if (/(s|x|z|ch|sh)es$/.test(stem)) stem = stem.slice(0, -2);
  else if (/[^su]s$/.test(stem)) stem = stem.slice(0, -1);
  return stem.endsWith("e") && stem.length > 3 ? stem.slice(0, -1) : stem;
}

function undouble(stem: string): string {
  return /([^aeiouslz])\1$/.test(stem) ? stem.slice(0, -1) : stem;
}
