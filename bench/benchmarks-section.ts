import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Replaces one hand-run bench's section of BENCHMARKS.md, between its markers
 * `<!-- NAME:begin (SCRIPT) -->` and `<!-- NAME:end -->`, or appends the section when the file has
 * none yet. Only full runs call this: a run with `--out` or `--limit` leaves BENCHMARKS.md alone.
 *
 * @example
 * replaceBenchmarksSection("video", "bench/video.ts", markdown);
 */
export function replaceBenchmarksSection(name: string, script: string, markdown: string): void {
  const path = join(import.meta.dirname, "../BENCHMARKS.md");
  const begin = `<!-- ${name}:begin (${script}) -->`;
  const end = `<!-- ${name}:end -->`;
  const current = readFileSync(path, "utf8");
  const block = `${begin}\n${markdown}${end}`;
  const start = current.indexOf(begin);
  const stop = current.indexOf(end);
  const next =
    start >= 0 && stop > start
      ? `${current.slice(0, start)}${block}${current.slice(stop + end.length)}`
      : `${current.trimEnd()}\n\n${block}\n`;
  writeFileSync(path, next);
}
