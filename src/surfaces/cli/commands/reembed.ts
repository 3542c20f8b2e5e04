import type { Scope } from "../../../core/scope.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";
import { type Progress, startProgress } from "../progress.ts";

export const reembedHelp = `cairn reembed [--tenant T --user U [--agent A]] [--force] [--profile P]
  Makes the vectors of every scope in the store (or of one scope) again with the models of the current
  profile, after a change of embedding model: raw nodes, images and their captions and OCR stay exactly
  as they are. Each scope's vectors are swapped in one transaction (an audit event 'reembed') and its
  index rebuilt on them, so searching with the new profile no longer fails with a model mismatch.
  Scopes whose vectors already come from these models are skipped, so a run that stopped part way can
  be run again; --force makes them again too.`;

export async function reembed(options: CommonOptions, flags: { scopeGiven: boolean; force: boolean }): Promise<number> {
  const memory = await openMemory(options, { mustExist: true });
  try {
    let progress: Progress | undefined;
    let current = "";
    let shown = 0;
    const results = await memory.reembed(flags.scopeGiven ? scopeOf(options) : undefined, {
      force: flags.force,
      onProgress: ({ scope, done, total }) => {
        const where = scopeName(scope);
        if (where !== current) {
          progress?.stop();
          progress = startProgress(`reembed ${where}`, total, { quiet: options.json });
          current = where;
          shown = 0;
        }
        for (; shown < done; shown++) progress?.tick();
      },
    });
    progress?.stop();
    const made = results.filter((result) => !result.skipped);
    output(options, { scopes: results }, () =>
      [
        ...results.map(({ scope, result }) =>
          result
            ? `${scopeName(scope)}: ${result.rawNodes} raw node(s), ${result.vectors} vector(s) in ${result.to.join(", ")} (were ${result.from.join(", ") || "none"})`
            : `${scopeName(scope)}: already made by these models, skipped`,
        ),
        results.length === 0
          ? "the store holds no scope"
          : `re-embedded ${made.length} scope(s), skipped ${results.length - made.length}`,
      ].join("\n"),
    );
    return 0;
  } finally {
    await memory.close();
  }
}

function scopeName(scope: Scope): string {
  return `${scope.tenant}/${scope.user}${scope.agent ? `/${scope.agent}` : ""}`;
}
