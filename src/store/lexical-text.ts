/**
 * Chinese, Japanese and Korean are written without spaces between words, so a word tokenizer that
 * splits on spaces and punctuation (FTS5's `unicode61`, PostgreSQL's default parser) sees a whole
 * clause as one token: "我昨天在东京买了相机" matched only by itself, never by "东京" or "相机".
 * Both stores therefore index such runs as overlapping character pairs (bigrams) plus single
 * characters, and a query's runs become bigrams (a one-character run stays one character): every
 * query that is a substring of the text meets its pairs, with no dictionary or segmenter to ship.
 * Text without these scripts passes through unchanged, so English indexing and ranking are
 * untouched. See docs/decisions/016-cjk-bigrams.md.
 */

/** Han (with 々 and 〇), kana with the prolonged-sound mark (also half-width), and Hangul. */
const cjkCharacter =
  "\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}\\u3005\\u3007\\u30fc\\uff70";
const cjkRun = new RegExp(`[${cjkCharacter}]+`, "gu");
const anyCjk = new RegExp(`[${cjkCharacter}]`, "u");

/** Whether the text holds any character the bigram rule applies to. */
export function hasCjk(text: string): boolean {
  return anyCjk.test(text);
}

/** Overlapping pairs of a run's characters (code points); a one-character run is itself. */
export function cjkBigrams(run: string): string[] {
  const characters = [...run];
  if (characters.length < 2) return characters;
  return characters.slice(1).map((character, index) => `${characters[index]}${character}`);
}

/**
 * A document's text as the lexical index stores it: each CJK run replaced by its single characters
 * and its bigrams, space-separated, so the word tokenizer sees each as a token; the rest unchanged.
 */
export function lexicalDocument(text: string): string {
  if (!hasCjk(text)) return text;
  return text.replace(cjkRun, (run) => {
    const characters = [...run];
    const pairs = characters.length > 1 ? cjkBigrams(run) : [];
    return ` ${[...characters, ...pairs].join(" ")} `;
  });
}

/** A query word (a run of letters and digits) split into its non-CJK parts and the bigrams of its CJK runs. */
export function splitQueryWord(word: string): { readonly words: string[]; readonly cjk: string[] } {
  if (!hasCjk(word)) return { words: [word], cjk: [] };
  const cjk: string[] = [];
  const words = word
    .replace(cjkRun, (run) => {
      cjk.push(...cjkBigrams(run));
      return " ";
    })
    .split(" ")
    .filter((part) => part.length > 0);
  return { words, cjk };
}
