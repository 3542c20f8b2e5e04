import { InputError } from "../../../core/errors.ts";
import type { ForgetTarget } from "../../../store/records.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";

export const forgetHelp = `cairn forget (--session KEY|ID | --raw-node ID | --all --yes) [--user U]
  Deletes raw evidence and everything derived from it; the deletion is recorded in the audit log.`;

export async function forget(
  options: CommonOptions,
  flags: { session?: string; rawNode?: string; all?: boolean; yes?: boolean },
): Promise<number> {
  const chosen = [flags.session, flags.rawNode, flags.all || undefined].filter((value) => value !== undefined);
  if (chosen.length !== 1) throw new InputError("forget", "give exactly one of --session, --raw-node or --all");
  if (flags.all && !flags.yes) throw new InputError("--all", "forgetting a whole scope needs --yes");
  const target: ForgetTarget = flags.session
    ? { session: flags.session }
    : flags.rawNode
      ? { rawNode: flags.rawNode }
      : { all: true };
  const memory = await openMemory(options, { mustExist: true });
  try {
    const result = await memory.forget(scopeOf(options), target);
    output(
      options,
      result,
      () =>
        `forgot ${result.sessions} session(s), ${result.rawNodes} raw node(s), ${result.entries} entr(y/ies), ${result.blobsDeleted} image file(s); audit ${result.auditId}`,
    );
    return 0;
  } finally {
    await memory.close();
  }
}
