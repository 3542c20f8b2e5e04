import { queryTerms } from "../query-terms.ts";

/** Free text as an FTS5 MATCH expression: every term quoted (never FTS syntax) and OR-ed, letting BM25 weigh them. */
export function toMatchExpression(text: string, maxTerms = 32): string | null {
  const terms = queryTerms(text, maxTerms);
  if (terms.length === 0) return null;
  return terms.map((term) => `"${term}"`).join(" OR ");
}
