import { InputError } from "../../core/errors.ts";
import { defaultIngestLimits } from "../../ingest/limits.ts";
import { readRegularFile } from "../../ingest/regular-file.ts";

export interface JsonlRecord {
  readonly line: number;
  readonly value: Record<string, unknown>;
}

/**
 * Parses JSONL; a bad line is an `InputError` whose field names the line. Blank lines are skipped.
 * The file must be a regular file (a FIFO would block the read forever) and valid UTF-8: a bad byte
 * is refused with its line, never turned into U+FFFD.
 */
export async function readJsonl(
  path: string,
  timeoutMs: number = defaultIngestLimits.fileReadTimeoutMs,
): Promise<JsonlRecord[]> {
  const bytes = await readRegularFile(path, path, { timeoutMs, what: "input file" });
  const records: JsonlRecord[] = [];
  splitLines(bytes).forEach((rawBytes, index) => {
    const line = index + 1;
    let raw: string;
    try {
      raw = new TextDecoder("utf-8", { fatal: true, ignoreBOM: line !== 1 }).decode(rawBytes);
    } catch (error) {
      throw new InputError(`line ${line}`, "is not valid UTF-8", { cause: error });
    }
    if (!raw.trim()) return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new InputError(`line ${line}`, `not valid JSON (${(error as Error).message})`, { cause: error });
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new InputError(`line ${line}`, "must be a JSON object (one session per line)");
    }
    records.push({ line, value: value as Record<string, unknown> });
  });
  if (records.length === 0) throw new InputError(path, "no sessions in the input file");
  return records;
}

/** Lines by `\n` (a `\r` before it is JSON whitespace), split on bytes so each line is decoded on its own. */
function splitLines(bytes: Uint8Array): Uint8Array[] {
  const lines: Uint8Array[] = [];
  let start = 0;
  for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a, start)) {
    lines.push(bytes.subarray(start, at));
    start = at + 1;
  }
  lines.push(bytes.subarray(start));
  return lines;
}
