import { createRequire } from "node:module";

type CountO200k = (text: string, options: { disallowedSpecial: Set<string> }) => number;

/**
 * The o200k_base tables are a 2.4 MB module whose compilation took about 0.6 s of a 1 s CLI start
 * (measured with --cpu-prof on `cairn search` against a missing store): they are loaded the first
 * time a token is counted, not when anything importing this module starts, so a command that never
 * counts (a refusal, `--help`, `forget`, `check`) does not pay for them. Required synchronously (the
 * package's CommonJS build) because counting is synchronous.
 */
let countO200k: CountO200k | undefined;
function o200k(): CountO200k {
  countO200k ??= (createRequire(import.meta.url)("gpt-tokenizer") as { countTokens: CountO200k }).countTokens;
  return countO200k;
}

/**
 * Stored text is data, never control: a turn that quotes `<|endoftext|>` is counted as the plain
 * characters an API would tokenize it as, not refused (the library's default throws on it).
 */
const asPlainText = { disallowedSpecial: new Set<string>() };

/**
 * Loads the tables now: for a long-running process (`cairn serve`, `cairn mcp`), so that its first
 * search does not pay for them.
 */
export function warmTokenCounter(): void {
  o200k();
}

/** Text tokens as a current OpenAI model counts them (o200k_base BPE). */
export function countTokens(text: string): number {
  return text.length === 0 ? 0 : o200k()(text, asPlainText);
}

/** Each retry cuts 5% more of what is left: a few token counts, each overshooting the limit by little. */
const stepShare = 0.05;
/** ...and at least this many characters, so a short text does not step one character at a time. */
const minStepChars = 4;
/** A cut moves back to a word boundary only when that keeps at least this share of the text. */
const wordBoundaryKeeps = 0.8;

/**
 * Recent cuts, by limit and text: maintenance renders the same routing text more than once (the
 * judge's view of an incoming entry, then the entry it becomes), and a cut counts tokens up to a
 * dozen times. Only short texts are kept (routing texts are a few hundred characters).
 */
const fitted = new Map<string, Readonly<{ text: string; tokens: number }>>();
const fittedCapacity = 256;
const fittedMaxChars = 4096;

/** Cuts text to at most `maxTokens` tokens, on a word boundary where possible. */
export function fitTokens(text: string, maxTokens: number): Readonly<{ text: string; tokens: number }> {
  if (text.length > fittedMaxChars) return fit(text, maxTokens);
  const key = `${maxTokens}:${text}`;
  const kept = fitted.get(key);
  if (kept) return kept;
  const result = Object.freeze(fit(text, maxTokens));
  fitted.set(key, result);
  const oldest = fitted.keys().next();
  if (fitted.size > fittedCapacity && !oldest.done) fitted.delete(oldest.value);
  return result;
}

function fit(text: string, maxTokens: number): { text: string; tokens: number } {
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
  if (space <= candidate.length * wordBoundaryKeeps) return { text: candidate, tokens };
  candidate = candidate.slice(0, space);
  return { text: candidate, tokens: countTokens(candidate) };
}
