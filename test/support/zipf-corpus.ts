/**
 * A deterministic corpus with a long tail, for lexical tests that need words matching thousands of
 * documents beside words matching a handful: word i of the vocabulary appears with weight ~1/(i+1).
 */
export function zipfCorpus(seed: number, documents: number, vocabulary: readonly string[]): string[] {
  let state = seed;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  const harmonic = vocabulary.reduce((sum, _, index) => sum + 1 / (index + 1), 0);
  const pick = () => {
    let target = next() * harmonic;
    for (const [index, word] of vocabulary.entries()) {
      target -= 1 / (index + 1);
      if (target <= 0) return word;
    }
    return vocabulary.at(-1) as string;
  };
  return Array.from({ length: documents }, () => Array.from({ length: 4 + Math.floor(next() * 14) }, pick).join(" "));
}
