import type { Scope } from "../../../core/scope.ts";
import type { IndexCheck, IndexRepair } from "../../../memory.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";

export const checkHelp = `cairn check [--tenant T --user U [--agent A]] [--repair]
  Verifies the active index of every scope in the store (or of one scope): every raw node reachable
  from an active entry or a recorded fallback, links sound, every maintenance action audited, bounds
  held (DESIGN invariants 2 and 6). Exit code 6 when a violation is found.
  --repair: a scope with violations (e.g. entries stranded by an older Cairn's forget) gets its
  unreachable entries hosted under an active entry, or else its index rebuilt from its raw nodes;
  each repair is an audit event. Exit code 0 when every scope is sound afterwards, else 6.`;

/** Exit code for a store whose index breaks an invariant. */
export const violationExitCode = 6;

export async function check(options: CommonOptions, flags: { scopeGiven: boolean; repair: boolean }): Promise<number> {
  const memory = await openMemory(options, { mustExist: true });
  try {
    const scopes: Scope[] = flags.scopeGiven ? [scopeOf(options)] : await memory.listScopes();
    const results: { scope: Scope; check: IndexCheck; repair?: Omit<IndexRepair, "after"> }[] = [];
    for (const scope of scopes) {
      if (!flags.repair) {
        results.push({ scope, check: await memory.checkIndex(scope) });
        continue;
      }
      const { after, ...repair } = await memory.repairIndex(scope);
      results.push({ scope, check: after, repair });
    }
    const violations = results.reduce((sum, { check }) => sum + check.violations.length, 0);
    output(options, { scopes: results, violations }, () =>
      [
        ...results.map(({ scope, check, repair }) => {
          const where = `${scope.tenant}/${scope.user}${scope.agent ? `/${scope.agent}` : ""}`;
          const use = check.utilisation;
          const head = `${where}: ${check.rawNodes} raw nodes, ${use.entries}/${use.bounds.entries} active entries on ${use.pages}/${use.bounds.pages} pages, ${use.tokens}/${use.bounds.tokens} tokens, ${use.bytes}/${use.bounds.bytes} bytes; ${use.pointers} raw nodes pointed at; ${check.violations.length} violation(s)`;
          const repaired = repairLine(repair);
          return [
            head,
            ...repaired,
            ...check.violations.map((violation) => `  ${violation.invariant}: ${violation.message}`),
          ].join("\n");
        }),
        results.length === 0 ? "the store holds no scope" : `${violations} violation(s) in ${results.length} scope(s)`,
      ].join("\n"),
    );
    return violations > 0 ? violationExitCode : 0;
  } finally {
    await memory.close();
  }
}

function repairLine(repair: Omit<IndexRepair, "after"> | undefined): string[] {
  if (!repair || repair.method === "none") return [];
  const found = repair.before.violations.length;
  return repair.method === "rehost"
    ? [`  repaired ${found} violation(s): ${repair.hosted.length} unreachable entr(y/ies) hosted under an active entry`]
    : [`  repaired ${found} violation(s): index rebuilt from the raw nodes`];
}
