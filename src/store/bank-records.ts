/**
 * The question bank (PMMC) as the store keeps it: verified question–program pairs of one scope.
 * Plain data: the store never runs or checks a program (compile/ validates one before running it);
 * it keeps which raw nodes each program's verification rests on, so a forget can retire the
 * programs whose evidence it deletes in the same transaction (DESIGN invariant 1).
 */
export interface BankProgram {
  readonly id: string;
  /** The predicted question the program answers (what a query is matched against). */
  readonly question: string;
  /** The evidence opportunity it came from (visual-attribute, later-naming, ...). */
  readonly kind: string;
  /** The program as JSON data. */
  readonly program: Readonly<Record<string, unknown>>;
  /** The question's text vector and its space (null when the profile has none). */
  readonly vector: Float32Array | null;
  readonly space: string | null;
  /** The mean image vector of the evidence's images and its space, for a query that comes with an image. */
  readonly imageVector: Float32Array | null;
  readonly imageSpace: string | null;
  /** Raw nodes the verification rests on; at least one, all stored in the scope. */
  readonly evidence: readonly string[];
  /** Session keys of the compilation unit. */
  readonly sessions: readonly string[];
  /** Time span of the history the program was compiled from. */
  readonly coverFromMs: number;
  readonly coverToMs: number;
  /** How it was verified: roles, attempts with their diagnoses, the time it was run as of. */
  readonly verification: Readonly<Record<string, unknown>>;
  readonly createdMs: number;
}

/** What an admission or a retirement records in the audit log with the bank change. */
export interface BankAudit {
  readonly action: string;
  readonly subject: string;
  readonly details: Readonly<Record<string, unknown>>;
}
