import { countTokens as countO200k } from "gpt-tokenizer";

/** Text tokens as a current OpenAI model counts them (o200k_base BPE). */
export function countTokens(text: string): number {
  return text.length === 0 ? 0 : countO200k(text);
}

/** Cuts text to at most `maxTokens` tokens, on a word boundary where possible. */
export function fitTokens(text: string, maxTokens: number): { text: string; tokens: number } {
  let tokens = countTokens(text);
  if (tokens <= maxTokens) return { text, tokens };
  // Tokens are roughly proportional to characters: shrink proportionally, then step down.
  let cut = Math.max(0, Math.floor((text.length * maxTokens) / tokens));
  let candidate = text.slice(0, cut);
  tokens = countTokens(candidate);
  while (tokens > maxTokens && cut > 0) {
    cut = Math.max(0, cut - Math.max(4, Math.floor(cut * 0.05)));
    candidate = text.slice(0, cut);
    tokens = countTokens(candidate);
  }
  const space = candidate.lastIndexOf(" ");
  if (space > candidate.length * 0.8) candidate = candidate.slice(0, space);
  return { text: candidate, tokens: countTokens(candidate) };
}
