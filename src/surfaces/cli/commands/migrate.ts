import { resolve } from "node:path";
import { InputError } from "../../../core/errors.ts";
import { defaultIndexTextConfig, storedIndexTexts } from "../../../store/index-text.ts";
import { openStore } from "../../../store/open-store.ts";
import { compareStores, copyStore } from "../../../store/transfer.ts";
import { type CommonOptions, output } from "../context.ts";
import { type Progress, startProgress } from "../progress.ts";
import { violationExitCode } from "./check.ts";

export const migrateHelp = `cairn migrate --db SOURCE --to TARGET [--carry-audit-secret]
  Copies every scope of one store into another, keeping ids, times, vectors, appended parts, the
  question bank, video memory, the active index and the audit log, then compares the two record by
  record and every image by its hash. The audit log's keyed hashes of forgotten keys are copied as
  they are (the keys are gone, so they cannot be re-keyed); --carry-audit-secret makes the source's
  audit secret the target's so they keep matching (refused if the target already hashed under its
  own, or if it keeps one secret and the source's tenants have several). SOURCE must exist;
  TARGET is created if missing and must not hold sessions SOURCE lacks. A copy stopped part way can be
  run again: sessions already there are skipped. Exit code 0 when the copy is identical, 6 if not.`;

export async function migrate(
  options: CommonOptions,
  to: string | undefined,
  carryAuditSecret = false,
): Promise<number> {
  if (!to) throw new InputError("--to", "name the store to copy into");
  const target = /^postgres(ql)?:\/\//i.test(to) ? to : resolve(to);
  if (target === options.db) throw new InputError("--to", "the target must be another store than --db");
  const source = await openStore(options.db, { mustExist: true });
  try {
    const into = await openStore(target);
    try {
      let progress: Progress | undefined;
      const counts = await copyStore(source, into, {
        carryAuditSecret,
        // What Memory indexes by default (decision 018): the copy answers searches as the source does.
        indexTexts: (nodes) => storedIndexTexts(nodes, defaultIndexTextConfig),
        onProgress: ({ sessions }) => {
          progress ??= startProgress("migrate", sessions, { quiet: options.json });
          progress.tick();
        },
      });
      progress?.stop();
      const differences = await compareStores(source, into);
      output(options, { ...counts, differences }, () =>
        [
          `copied ${counts.scopes} scope(s): ${counts.sessions} session(s) (${counts.skipped} already there), ${counts.sessionParts} appended part(s), ${counts.rawNodes} raw node(s), ${counts.blobs} image(s), ${counts.programs} question-bank program(s), ${counts.videoItems} video item(s), ${counts.notifierRules} notifier record(s), ${counts.entries} index entr(y/ies), ${counts.auditEvents} audit event(s)`,
          ...(counts.foreignKeyedEvents > 0
            ? [
                `warning: ${counts.foreignKeyedEvents} audit event(s) keep keyed hashes of forgotten keys made under the source's audit secret, which was not carried: only the source's secret matches them (--carry-audit-secret carries it)`,
              ]
            : []),
          differences.length === 0
            ? "compared every record and image hash: identical"
            : `${differences.length} difference(s):\n${differences.map((line) => `  ${line}`).join("\n")}`,
        ].join("\n"),
      );
      return differences.length === 0 ? 0 : violationExitCode;
    } finally {
      await into.close();
    }
  } finally {
    await source.close();
  }
}
