/** Text helpers shared by maintenance (digests, the relation judge) and routing: one notion of a "word". */

/** Words too common to say what a text is about (English, plus chat filler). */
export const stopwords = new Set(
  (
    "a about above after again against all am an and any are as at be because been before being below between both " +
    "but by can could did do does doing down during each few for from further had has have having he her here hers " +
    "herself him himself his how i if in into is it its itself just me more most my myself no nor not of off on once " +
    "only or other our ours ourselves out over own same she should so some such than that the their theirs them " +
    "themselves then there these they this those through to too under until up very was we were what when where which " +
    "while who whom why will with would you your yours yourself yourselves also really yeah yes oh hey hi thanks thank " +
    "gonna got get like just well know think going one lot much things thing good great awesome cool nice sure wow " +
    "it's i'm that's don't can't you're i've i'll let's what's didn't"
  ).split(" "),
);

/** A single capital letter (an initial, "I") is no entity. */
const minEntityChars = 2;

/** Capitalised words and phrases not at a sentence start, and any capitalised word not a stopword. */
export function extractEntities(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/\b[A-Z][\p{L}'’-]*(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][\p{L}'’-]*)*/gu)) {
    // "Ana's" → "ana"; a closing quote or dash is punctuation, not part of the name ('Pacemaker' → "pacemaker").
    const phrase = match[0]
      .replace(/['’]s$/, "")
      .replace(/['’-]+$/, "")
      .trim();
    const lower = phrase.toLowerCase();
    if (phrase.length < minEntityChars || stopwords.has(lower)) continue;
    found.push(lower);
  }
  return found;
}

/** Shorter words are mostly abbreviations and function words the stopword list does not name. */
const minWordChars = 3;
/** Lower-cased words of three or more characters that are not stopwords or bare numbers. */
export function contentWords(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'’-]*/gu) ?? []).filter(
    (word) => word.length >= minWordChars && !stopwords.has(word) && !/^\d+$/.test(word),
  );
}
