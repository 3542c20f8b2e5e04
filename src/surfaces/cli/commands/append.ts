import { dirname, resolve } from "node:path";
import { InputError } from "../../../core/errors.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";
import { readJsonl } from "../jsonl.ts";

export const appendHelp = `cairn append --session KEY (<turns.jsonl> | --text "<words>" [--speaker NAME]) [--part KEY]
  Appends turns to a stored session (or makes it): one turn per line {"speaker","text","images":[{"path"}],"time"?},
  image paths relative to the file. Earlier turns stay as they were; appending the same turns again is a no-op
  unless --part names a new part.`;

export interface AppendFlags {
  readonly session?: string;
  readonly text?: string;
  readonly speaker?: string;
  readonly part?: string;
  readonly time?: string;
}

export async function appendCommand(
  options: CommonOptions,
  file: string | undefined,
  flags: AppendFlags,
): Promise<number> {
  if (!flags.session) throw new InputError("--session", "name the session to append to");
  if ((file === undefined) === (flags.text === undefined)) {
    throw new InputError("turns", "give a JSONL file of turns or --text, not both");
  }
  const { turns, baseDir } =
    file === undefined
      ? { turns: [{ ...(flags.speaker ? { speaker: flags.speaker } : {}), text: flags.text }], baseDir: undefined }
      : await readTurns(file);
  const memory = await openMemory(options);
  try {
    const result = await memory.appendTurns(
      scopeOf(options),
      flags.session,
      { turns, ...(flags.time ? { time: flags.time } : {}) },
      { ...(baseDir ? { baseDir } : {}), ...(flags.part ? { partKey: flags.part } : {}) },
    );
    output(options, result, () =>
      [
        result.duplicate
          ? `already appended: session ${result.sessionKey} unchanged`
          : `appended ${result.rawNodeIds.length} turn(s) to session ${result.sessionKey}`,
        ...result.warnings.map((warning) => `warning: ${warning}`),
      ].join("\n"),
    );
    return 0;
  } finally {
    await memory.close();
  }
}

/** Every line parsed before anything is written: a bad line leaves the session as it was. */
async function readTurns(file: string): Promise<{ turns: unknown[]; baseDir: string }> {
  const records = await readJsonl(file);
  return { turns: records.map((record) => record.value), baseDir: dirname(resolve(file)) };
}
