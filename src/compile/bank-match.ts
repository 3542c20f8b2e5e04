import { contentWords } from "../core/text.ts";
import { cosine } from "../core/vectors.ts";

/** A banked question as matching sees it. */
export interface BankCandidate {
  readonly id: string;
  readonly question: string;
  readonly vector: Float32Array | null;
  readonly imageVector: Float32Array | null;
}

export interface BankQuery {
  readonly text: string;
  readonly vector: Float32Array | undefined;
  readonly imageVector: Float32Array | undefined;
}

export type MatchChannel = "bm25" | "dense" | "image";

export interface BankMatch {
  readonly id: string;
  /** Normalised score in [0, 1]: 1 only for a question ranked first by every channel with similarity 1. */
  readonly score: number;
  readonly channels: Partial<Record<MatchChannel, { readonly rank: number; readonly similarity: number }>>;
}

/**
 * Matches a query against the bank's questions by a similarity-weighted reciprocal-rank fusion,
 * normalised so PMMC's gate (α_route, δ) reads on a fixed scale (docs/decisions/010):
 *
 *   score(b) = (1/|C|) · Σ_c s_c(q, b) · (k + 1) / (k + rank_c(b))
 *
 * over the channels C the query can use (BM25 when it has words, dense when it has a vector,
 * image when it has an image); s_c is a similarity in [0, 1] — for BM25 the share of the query's
 * IDF-weighted words the question holds, for dense and image the cosine (negatives as 0). The rank
 * factor is RRF's 1/(k + rank) scaled to 1 at rank 1, so ranking still decides between close
 * candidates while the similarity keeps an unrelated best match low. Pure.
 */
export function matchBank(query: BankQuery, bank: readonly BankCandidate[], rrfK: number): BankMatch[] {
  const lists: [MatchChannel, { id: string; similarity: number }[]][] = [];
  const terms = [...new Set(contentWords(query.text))];
  if (terms.length > 0) lists.push(["bm25", lexical(terms, bank)]);
  if (query.vector) {
    const vector = query.vector;
    lists.push([
      "dense",
      bank.map((entry) => ({ id: entry.id, similarity: entry.vector ? Math.max(0, cosine(vector, entry.vector)) : 0 })),
    ]);
  }
  if (query.imageVector) {
    const vector = query.imageVector;
    lists.push([
      "image",
      bank.map((entry) => ({
        id: entry.id,
        similarity: entry.imageVector ? Math.max(0, cosine(vector, entry.imageVector)) : 0,
      })),
    ]);
  }
  if (lists.length === 0) return [];
  const scores = new Map<string, { score: number; channels: BankMatch["channels"] }>();
  for (const [channel, list] of lists) {
    const ranked = list.filter((item) => item.similarity > 0).sort((a, b) => b.similarity - a.similarity);
    ranked.forEach((item, index) => {
      const rank = index + 1;
      const current = scores.get(item.id) ?? { score: 0, channels: {} };
      current.score += (item.similarity * (rrfK + 1)) / (rrfK + rank) / lists.length;
      scores.set(item.id, {
        score: current.score,
        channels: { ...current.channels, [channel]: { rank, similarity: item.similarity } },
      });
    });
  }
  return [...scores.entries()]
    .map(([id, { score, channels }]) => ({ id, score: Math.min(1, score), channels }))
    .sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
}

/** Share of the query's IDF mass (over the bank's questions) that each question's words cover. */
function lexical(terms: readonly string[], bank: readonly BankCandidate[]): { id: string; similarity: number }[] {
  const documents = bank.map((entry) => new Set(contentWords(entry.question)));
  const idf = new Map(
    terms.map((term) => {
      const containing = documents.filter((words) => words.has(term)).length;
      return [term, Math.log(1 + (bank.length - containing + 0.5) / (containing + 0.5))];
    }),
  );
  const total = terms.reduce((sum, term) => sum + (idf.get(term) ?? 0), 0);
  return bank.map((entry, index) => {
    const words = documents[index] ?? new Set<string>();
    const covered = terms.reduce((sum, term) => sum + (words.has(term) ? (idf.get(term) ?? 0) : 0), 0);
    return { id: entry.id, similarity: total > 0 ? covered / total : 0 };
  });
}
