/** One hit of a ranked list, best first by `score` (larger is better in every channel). */
export interface Ranked {
  readonly id: string;
  readonly score: number;
}
