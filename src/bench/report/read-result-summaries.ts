import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { type BenchResultSummary, benchResultSummarySchema } from "./bench-result-summary.ts";

export interface SkippedFile {
  readonly file: string;
  readonly reason: string;
}

export interface ResultSummaries {
  readonly results: BenchResultSummary[];
  /** JSON files in the folder that were not reported, and why (other tools' output, older duplicates). */
  readonly skipped: SkippedFile[];
}

/**
 * Reads every `*.json` in `dir` that has a result's shape. Other JSON is skipped with a reason
 * rather than failing the report. When two files hold the same dataset and method (a copied or
 * renamed file), the later run is kept.
 *
 * @example
 * const { results, skipped } = await readResultSummaries("bench/results");
 */
export async function readResultSummaries(dir: string): Promise<ResultSummaries> {
  const names = (await readdir(dir)).filter((name) => name.endsWith(".json")).sort();
  const kept = new Map<string, { file: string; result: BenchResultSummary }>();
  const skipped: SkippedFile[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    const parsed = parseResult(await readFile(file, "utf8"));
    if (!parsed.ok) {
      skipped.push({ file, reason: parsed.reason });
      continue;
    }
    const key = `${parsed.result.dataset}\u0000${parsed.result.method}`;
    const previous = kept.get(key);
    if (previous === undefined) {
      kept.set(key, { file, result: parsed.result });
      continue;
    }
    const [older, newer] =
      previous.result.config.date <= parsed.result.config.date
        ? [previous, { file, result: parsed.result }]
        : [{ file, result: parsed.result }, previous];
    kept.set(key, newer);
    skipped.push({
      file: older.file,
      reason: `older result for ${older.result.dataset}/${older.result.method} than ${newer.file}`,
    });
  }
  return { results: [...kept.values()].map((entry) => entry.result), skipped };
}

function parseResult(text: string): { ok: true; result: BenchResultSummary } | { ok: false; reason: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `not JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  const parsed = benchResultSummarySchema.safeParse(value);
  if (parsed.success) return { ok: true, result: parsed.data };
  const issue = parsed.error.issues[0];
  return {
    ok: false,
    reason: `not a bench result: ${issue ? `${issue.path.join(".") || "(root)"}: ${issue.message}` : "invalid"}`,
  };
}
