import { queryTerms } from "../query-terms.ts";

/** Free text as FTS5 phrases: every term quoted, so user text is never parsed as FTS syntax. */
export function toPhrases(text: string, maxTerms = 32): string[] {
  return queryTerms(text, maxTerms).map((term) => `"${term}"`);
}

/** Free text as an FTS5 MATCH expression: every term quoted (never FTS syntax) and OR-ed, letting BM25 weigh them. */
export function toMatchExpression(text: string, maxTerms = 32): string | null {
  const phrases = toPhrases(text, maxTerms);
  return phrases.length > 0 ? phrases.join(" OR ") : null;
}
