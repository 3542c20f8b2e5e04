import { dirname, resolve } from "node:path";
import { InputError } from "../../../core/errors.ts";
import { type Scope, validateScope } from "../../../core/scope.ts";
import type { AddSessionResult, Memory } from "../../../memory.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";
import { readJsonl } from "../jsonl.ts";
import { startProgress } from "../progress.ts";

export const ingestHelp = `cairn ingest <file.jsonl> [--user U] [--tenant T]
  One session per line: {"session","time","turns":[{"speaker","text","images":[{"path","caption"}]}],"user"?}
  Image paths are relative to the file's folder. The whole file is validated before anything is written.`;

export interface IngestSummary {
  readonly file: string;
  readonly sessions: number;
  readonly added: number;
  readonly duplicates: number;
  readonly rawNodes: number;
  readonly warnings: readonly string[];
  readonly results: readonly (AddSessionResult & { line: number })[];
}

export async function ingest(options: CommonOptions, file: string | undefined): Promise<number> {
  if (!file) throw new InputError("file", "give a JSONL file: cairn ingest <file.jsonl>");
  const memory = await openMemory(options);
  try {
    const summary = await ingestFile(memory, options, file, { progress: !options.json });
    output(options, summary, () =>
      [
        `ingested ${summary.added} session(s), ${summary.rawNodes} raw node(s) into ${options.db}` +
          (summary.duplicates ? ` (${summary.duplicates} already stored)` : ""),
        ...summary.warnings.map((warning) => `warning: ${warning}`),
      ].join("\n"),
    );
    return 0;
  } finally {
    await memory.close();
  }
}

/** Validates every line first (schema, scope, images), then commits session by session. */
export async function ingestFile(
  memory: Memory,
  options: CommonOptions,
  file: string,
  display: { progress: boolean },
): Promise<IngestSummary> {
  const path = resolve(file);
  const baseDir = dirname(path);
  const records = await readJsonl(path);
  const sessions: { line: number; scope: Scope; body: Record<string, unknown> }[] = [];
  const checking = startProgress("checking", records.length, { quiet: !display.progress });
  for (const { line, value } of records) {
    const { user, tenant, agent, ...body } = value;
    const scope = atLine(line, () =>
      validateScope({
        ...scopeOf(options, typeof user === "string" ? user : options.user),
        ...(tenant === undefined ? {} : { tenant }),
        ...(agent === undefined ? {} : { agent }),
      }),
    );
    await atLineAsync(line, () => memory.validateSession(body, { baseDir }));
    sessions.push({ line, scope, body });
    checking.tick();
  }
  checking.stop();

  const results: (AddSessionResult & { line: number })[] = [];
  const writing = startProgress("ingesting", sessions.length, { quiet: !display.progress });
  for (const { line, scope, body } of sessions) {
    const result = await atLineAsync(line, () => memory.addSession(scope, body, { baseDir }));
    results.push({ line, ...result });
    writing.tick(String(body.session));
  }
  writing.stop();
  return {
    file: path,
    sessions: results.length,
    added: results.filter((result) => !result.duplicate).length,
    duplicates: results.filter((result) => result.duplicate).length,
    rawNodes: results.filter((result) => !result.duplicate).reduce((sum, result) => sum + result.rawNodeIds.length, 0),
    warnings: results.flatMap((result) => result.warnings.map((warning) => `line ${result.line}: ${warning}`)),
    results,
  };
}

function atLine<T>(line: number, run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw prefixed(line, error);
  }
}

async function atLineAsync<T>(line: number, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw prefixed(line, error);
  }
}

function prefixed(line: number, error: unknown): unknown {
  return error instanceof InputError
    ? new InputError(`line ${line}: ${error.field}`, error.reason, { cause: error })
    : error;
}
