import { readFile } from "node:fs/promises";
import { InputError } from "../../core/errors.ts";

export interface JsonlRecord {
  readonly line: number;
  readonly value: Record<string, unknown>;
}

/** Parses JSONL; a bad line is an `InputError` whose field names the line. Blank lines are skipped. */
export async function readJsonl(path: string): Promise<JsonlRecord[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new InputError(path, "input file is missing or unreadable", { cause: error });
  }
  const records: JsonlRecord[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = index + 1;
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
