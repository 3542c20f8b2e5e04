import { countTokens as countO200k } from "gpt-tokenizer";

/**
 * Stored text is data, never control: a turn that quotes `<|endoftext|>` is counted as the plain
 * characters an API would tokenize it as, not refused (the library's default throws on it).
 */
const asPlainText = { disallowedSpecial: new Set<string>() };

/** Text tokens as a current OpenAI model counts them (o200k_base BPE). */
export function countTokens(text: string): number {
  return text.length === 0 ? 0 : countO200k(text, asPlainText);
}

/** Each retry cuts 5% more of what is left: a few token counts, each overshooting the limit by little. */
const stepShare = 0.05;
/** ...and at least this many characters, so a short text does not step one character at a time. */
const minStepChars = 4;
/** A cut moves back to a word boundary only when that keeps at least this share of the text. */
const wordBoundaryKeeps = 0.8;

/** Cuts text to at most `maxTokens` tokens, on a word boundary where possible. */
export function fitTokens(text: string, maxTokens: number): { text: string; tokens: number } {
  let tokens = countTokens(text);
  if (tokens <= maxTokens) return { text, tokens };
  // Tokens are roughly proportional to characters: shrink proportionally, then step down.
  let cut = Math.max(0, Math.floor((text.length * maxTokens) / tokens));
  let candidate = text.slice(0, cut);
  tokens = countTokens(candidate);
  while (tokens > maxTokens && cut > 0) {
    cut = Math.max(0, cut - Math.max(minStepChars, Math.floor(cut * stepShare)));
    candidate = text.slice(0, cut);
    tokens = countTokens(candidate);
  }
  const space = candidate.lastIndexOf(" ");
  if (space > candidate.length * wordBoundaryKeeps) candidate = candidate.slice(0, space);
  return { text: candidate, tokens: countTokens(candidate) };
}
