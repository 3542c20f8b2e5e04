import { access, readFile } from "node:fs/promises";
import path from "node:path";
import { parse as parseYamlText, YAMLParseError } from "yaml";
import type { z } from "zod";
import { InputError } from "../../core/errors.ts";

/** What every loader accepts. */
export interface LoadOptions {
  /** Load at most this many histories (LCMP, which pools everything into one history: this many concepts). */
  readonly limit?: number;
}

/** `limit` checked: undefined for "all", else a positive integer. */
export function checkLimit(limit: number | undefined): number | undefined {
  if (limit === undefined) return undefined;
  if (!Number.isInteger(limit) || limit < 1) throw new InputError("limit", `must be a positive integer, got ${limit}`);
  return limit;
}

/**
 * The folder of one dataset: `<dataDir>/<name>` when it holds one of `markers`, or `dataDir` itself when the caller
 * pointed straight at the dataset's folder.
 */
export async function datasetFolder(dataDir: string, name: string, markers: readonly string[]): Promise<string> {
  const root = path.resolve(dataDir);
  for (const candidate of [path.join(root, name), root]) {
    for (const marker of markers) {
      if (await exists(path.join(candidate, marker))) return candidate;
    }
  }
  throw new InputError(
    path.join(root, name, markers[0] ?? ""),
    `not found: expected the data folder that holds ${name}/ (or the ${name} folder itself)`,
  );
}

export async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

export async function readTextFile(file: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InputError(file, code === "ENOENT" ? "file not found" : `cannot be read (${code ?? String(error)})`, {
      cause: error,
    });
  }
}

export async function readJsonFile(file: string): Promise<unknown> {
  const text = await readTextFile(file);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new InputError(file, `not valid JSON: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
}

/** YAML 1.2 (so unquoted `yes`/`no` stay strings); a syntax error names the file and line. */
export async function readYamlFile(file: string): Promise<unknown> {
  const text = await readTextFile(file);
  try {
    return parseYamlText(text, { uniqueKeys: true, maxAliasCount: 0 }) as unknown;
  } catch (error) {
    const line = error instanceof YAMLParseError ? error.linePos?.[0]?.line : undefined;
    throw new InputError(line ? `${file}: line ${line}` : file, `not valid YAML: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/**
 * Checks `value` (found at `where` inside `file`, e.g. `[3].qa[7]`) against `schema`; the error names the file and
 * the first offending field, e.g. `locomo10.json: [3].qa[7].evidence[0]: Expected string, received number`.
 */
export function parseWith<Output>(
  schema: z.ZodType<Output, z.ZodTypeDef, unknown>,
  value: unknown,
  file: string,
  where: string,
): Output {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const inner = issue?.path.map((part) => (typeof part === "number" ? `[${part}]` : `.${part}`)).join("") ?? "";
  throw new InputError(fieldOf(file, `${where}${inner}`), issue?.message ?? "invalid value");
}

/** `file: path` with a leading dot trimmed; `file: (root)` for the document itself. */
export function fieldOf(file: string, where: string): string {
  return `${file}: ${where.replace(/^\./, "") || "(root)"}`;
}
