import { dirname, resolve } from "node:path";
import { CairnError, ConflictError, InputError } from "../../../core/errors.ts";
import { type Scope, scopeKey, validateScope } from "../../../core/scope.ts";
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
        `ingested ${summary.added} session(s), ${summary.rawNodes} raw node(s) into ${options.dbLabel}` +
          (summary.duplicates ? ` (${summary.duplicates} already stored)` : ""),
        ...summary.warnings.map((warning) => `warning: ${warning}`),
      ].join("\n"),
    );
    return 0;
  } finally {
    await memory.close();
  }
}

/**
 * Validates every line first (schema, scope, images, and key conflicts within the file and with
 * the store), then commits runs of consecutive lines of one scope, up to `sessionsPerCommit` a
 * transaction (`Memory.addSessions`): a file with one bad line writes nothing.
 */
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
  /** Per scope and session key: the first line that has it and its content hash. */
  const seen = new Map<string, { line: number; contentHash: string }>();
  const checking = startProgress("checking", records.length, { quiet: !display.progress });
  for (const { line, value } of records) {
    const { user, tenant, agent, ...body } = value;
    const scope = atLine(line, () => lineScope(options, { user, tenant, agent }));
    const { sessionKey, contentHash } = await atLineAsync(line, () => memory.validateSession(body, { baseDir }));
    const key = `${scopeKey(scope)}\n${sessionKey}`;
    const earlier = seen.get(key);
    if (earlier && earlier.contentHash !== contentHash) {
      throw new InputError(
        `line ${line}: session`,
        `session ${sessionKey} is also on line ${earlier.line} with other content; a session key names one session`,
      );
    }
    if (!earlier) {
      seen.set(key, { line, contentHash });
      await atLineAsync(line, () => checkStored(memory, scope, sessionKey, contentHash));
    }
    sessions.push({ line, scope, body });
    checking.tick();
  }
  checking.stop();

  const results: (AddSessionResult & { line: number })[] = [];
  const writing = startProgress("ingesting", sessions.length, { quiet: !display.progress });
  for (const group of consecutiveGroups(sessions)) {
    const first = group[0]?.line ?? 0;
    const added = await atLineAsync(first, () =>
      memory.addSessions(
        group[0]?.scope as Scope,
        group.map(({ body }) => body),
        { baseDir },
      ),
    );
    for (const [index, result] of added.entries()) {
      const { line, body } = group[index] as (typeof group)[number];
      results.push({ line, ...result });
      writing.tick(String(body.session));
    }
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

/**
 * Sessions a transaction when the CLI writes a file: one fsync for the lot (`Memory.addSessions`),
 * at most this many sessions' vectors and images held at once.
 */
const sessionsPerCommit = 32;

/** Runs of consecutive lines with one scope, each at most `sessionsPerCommit` long, in file order. */
function consecutiveGroups<T extends { readonly scope: Scope }>(sessions: readonly T[]): T[][] {
  const groups: T[][] = [];
  for (const session of sessions) {
    const last = groups.at(-1);
    const head = last?.[0];
    if (last && head && scopeKey(head.scope) === scopeKey(session.scope) && last.length < sessionsPerCommit) {
      last.push(session);
    } else groups.push([session]);
  }
  return groups;
}

/**
 * The line's scope: `user`, `tenant` and `agent` on the line override the options. A wrong type is
 * an error at `scope.<name>` (as the SDK names it), never a silent fall back to the default.
 */
function lineScope(options: CommonOptions, fields: { user: unknown; tenant: unknown; agent: unknown }): Scope {
  for (const [name, value] of Object.entries(fields)) {
    if (value !== undefined && typeof value !== "string") {
      throw new InputError(`scope.${name}`, `must be a string (got ${value === null ? "null" : typeof value})`);
    }
  }
  const { user, tenant, agent } = fields as { user?: string; tenant?: string; agent?: string };
  return validateScope({
    ...scopeOf(options, user ?? options.user),
    ...(tenant === undefined ? {} : { tenant }),
    ...(agent === undefined ? {} : { agent }),
  });
}

/** A key already stored with other content would fail at its line after earlier lines were written: refuse it now. */
async function checkStored(memory: Memory, scope: Scope, sessionKey: string, contentHash: string): Promise<void> {
  let stored: Awaited<ReturnType<Memory["getSession"]>>;
  try {
    stored = await memory.getSession(scope, sessionKey);
  } catch (error) {
    if (CairnError.is(error) && error.code === "not_found") return;
    throw error;
  }
  if (stored.key === sessionKey && stored.contentHash !== contentHash) {
    throw new ConflictError(`session ${sessionKey} is already stored with other content; nothing was written`);
  }
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
  if (error instanceof InputError)
    return new InputError(`line ${line}: ${error.field}`, error.reason, { cause: error });
  if (error instanceof ConflictError) return new ConflictError(`line ${line}: ${error.message}`);
  return error;
}
