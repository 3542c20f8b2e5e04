import { mkdir, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { InputError } from "../../core/errors.ts";
import type { QuestionScore } from "../metrics.ts";
import type { BenchResult } from "../run-bench.ts";
import { summaryOf } from "./bench-result-summary.ts";

/**
 * Writes each result as `<dataset>-<method>.json` (everything but the questions, pretty JSON)
 * and `<dataset>-<method>.questions.jsonl` (one scored question a line, retrieved turns in the
 * dataset's own ids), so two runs can be compared question by question. Returns the paths written.
 *
 * @example
 * const files = await writeResults(await runBench(options), "bench/results");
 */
export async function writeResults(results: readonly BenchResult[], outDir: string): Promise<string[]> {
  const seen = new Map<string, number>();
  results.forEach((result, index) => {
    const base = resultFileBase(result);
    const earlier = seen.get(base);
    if (earlier !== undefined) {
      throw new InputError(`results[${index}]`, `writes ${base}.json, as results[${earlier}] does`);
    }
    seen.set(base, index);
  });
  await mkdir(outDir, { recursive: true });
  const written: string[] = [];
  for (const result of results) {
    const base = path.join(outDir, resultFileBase(result));
    written.push(await writeAtomically(`${base}.json`, `${JSON.stringify(summaryOf(result), null, 2)}\n`));
    const lines = result.questions.map((score) => `${JSON.stringify(questionLine(score))}\n`);
    written.push(await writeAtomically(`${base}.questions.jsonl`, lines.join("")));
  }
  return written;
}

/** `<dataset>-<method>`, with anything unsafe in a file name replaced. */
export function resultFileBase(result: { readonly dataset: string; readonly method: string }): string {
  return `${fileSafe(result.dataset)}-${fileSafe(result.method)}`;
}

/** A dataset or method name as it appears in file names. */
export function fileSafe(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, "_");
}

/** The identifying fields first, so a line reads (and diffs) from what was asked to what came back. */
function questionLine(score: QuestionScore): QuestionScore {
  const { id, category, gold, retrievedTurns, ...metrics } = score;
  return { id, category, gold, retrievedTurns, ...metrics };
}

/** The report reads these files back; a run killed mid-write must not leave half a JSON document. */
async function writeAtomically(file: string, text: string): Promise<string> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, text);
  await rename(temporary, file);
  return file;
}
