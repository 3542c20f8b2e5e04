import { InputError } from "../../../core/errors.ts";
import type { ForgetErasure, ForgetTarget } from "../../../store/records.ts";
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
        `forgot ${result.sessions} session(s), ${result.rawNodes} raw node(s), ${result.entries} entr(y/ies), ${result.blobsDeleted} image file(s); audit ${result.auditId}${erasureLine(result.erasure)}`,
    );
    return 0;
  } finally {
    await memory.close();
  }
}

/** What the store did so the forgotten bytes leave its files (decision 038); nothing on a store that does not say. */
function erasureLine(erasure: ForgetErasure | undefined): string {
  if (!erasure) return "";
  if (erasure.outcome === "pending") {
    return "; erasure pending: a reader holds an older snapshot, the next forget or open finishes it";
  }
  const how = erasure.outcome === "clean" ? "nothing left" : "copies found, database vacuumed";
  return `; erasure: ${how} (${erasure.pagesScanned} pages scanned, ${erasure.ms} ms)`;
}
