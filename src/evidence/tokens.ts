import { countTokens as countO200k } from "gpt-tokenizer";

/** Text tokens as a current OpenAI model counts them (o200k_base BPE). */
export function countTokens(text: string): number {
  return text.length === 0 ? 0 : countO200k(text);
}
