import { queryTerms } from "../store/query-terms.ts";

/**
 * Who a question is about and what a first pass suggests it is about (issue 19 part 3, decision
 * 024): model-free readings of the question's words against the candidates a search already holds.
 */

/**
 * The speakers the question names, among `speakers` (those of the candidates at hand): a speaker
 * is named by its full name or its first word, as a whole word in any case ("Caroline's" names
 * Caroline). Empty when the question names none of them.
 */
export function namedSpeakers(question: string, speakers: Iterable<string>): Set<string> {
  const words = new Set(question.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
  const text = ` ${(question.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).join(" ")} `;
  const named = new Set<string>();
  for (const speaker of speakers) {
    const parts = speaker.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
    if (parts.length === 0) continue;
    // A first name shorter than three letters ("Al", "Jo") or a common word ("user") would name too much.
    const first = parts[0] ?? "";
    const nameLike = first.length >= 3 && !commonWords.has(first);
    if ((parts.length > 1 && text.includes(` ${parts.join(" ")} `)) || (nameLike && words.has(first)))
      named.add(speaker);
  }
  return named;
}

// Words that are also used as names of speakers in chat data ("user", "assistant", "me").
const commonWords = new Set(["user", "assistant", "system", "bot", "me", "you", "the", "and", "will", "may", "mark"]);

/**
 * Whether the question asks for several pieces of evidence to be put together: a count, a list,
 * a comparison, or what two people share ("How many times…", "What activities has…", "What do A
 * and B both…"). These are the multi-hop questions that a second, feedback-seeded pass serves.
 */
export function asksForSeveral(question: string): boolean {
  return aggregateCues.test(question);
}

const aggregateCues =
  /\b(how many|how often|both|in common|besides|other than|what (?:kinds?|types?|sorts?) of|which (?:kinds?|types?|sorts?) of|ways|activities|things|places|events|hobbies|items|books|pets|sports|games|songs|instruments|foods|countries|cities|people)\b/i;

/**
 * Terms for a second lexical pass, seeded by the first pass's best items (pseudo-relevance
 * feedback): content words the question lacks. Names come first (words capitalised past the start
 * of a sentence: the entities the first pass found), then words by how many of the top items hold
 * them, then longer words (a cheap stand-in for rarity), then first occurrence. Words of the
 * question and of `exclude` (the speakers' names) are left out: the first pass had them already.
 */
export function feedbackTerms(
  question: string,
  topTexts: readonly string[],
  options: { readonly max: number; readonly exclude?: Iterable<string> },
): string[] {
  const asked = new Set(queryTerms(question, 64));
  for (const word of options.exclude ?? []) for (const part of queryTerms(word, 8)) asked.add(part);
  const counts = new Map<string, { items: number; names: number; first: number }>();
  let position = 0;
  for (const text of topTexts) {
    // The text's own content words (stop words out), so a single stop word is never a term.
    const content = new Set(queryTerms(text, 10_000));
    const seen = new Set<string>();
    for (const match of text.matchAll(/[\p{L}][\p{L}\p{N}'’-]*/gu)) {
      const before = text.slice(0, match.index).trimEnd();
      const name = /^\p{Lu}/u.test(match[0]) && before !== "" && !/[.!?:"“]$/u.test(before);
      for (const word of match[0].toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
        if (!content.has(word) || asked.has(word) || word.length < 4 || fillers.has(word)) continue;
        const current = counts.get(word) ?? { items: 0, names: 0, first: position++ };
        if (!seen.has(word)) current.items++;
        if (name) current.names++;
        seen.add(word);
        counts.set(word, current);
      }
    }
  }
  return [...counts.entries()]
    .sort(
      ([wordA, a], [wordB, b]) =>
        Number(b.names > 0) - Number(a.names > 0) ||
        b.items - a.items ||
        wordB.length - wordA.length ||
        a.first - b.first,
    )
    .slice(0, options.max)
    .map(([word]) => word);
}

// Chat filler that holds no topic; the lexical stop words are left out already.
const fillers = new Set(
  "really great thanks thank awesome cool glad good nice wow yeah yes sure just like love know think feel been also very much some that's it's i'm you're what's there here then than those these being would could should about after again always".split(
    " ",
  ),
);
