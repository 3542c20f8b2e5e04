import type { Scope } from "../../../core/scope.ts";
import type { IndexCheck, IndexRepair, LexicalRepair } from "../../../memory.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";

export const checkHelp = `cairn check [--tenant T --user U [--agent A]] [--repair]
  Verifies the active index of every scope in the store (or of one scope): every raw node reachable
  from an active entry or a recorded fallback, links sound, every maintenance action audited, bounds
  held (DESIGN invariants 2 and 6). Then, per tenant, the lexical search structures (the BM25
  index and its statistics) against the stored text they were built from. Exit code 6 when a
  violation is found.
  --repair: a scope with violations (e.g. entries stranded by an older Cairn's forget) gets its
  unreachable entries hosted under an active entry, or else its index rebuilt from its raw nodes;
  each repair is an audit event. A tenant whose lexical structures disagree with its text gets them
  rebuilt from it (derived data: nothing stored by a user changes). Exit code 0 when every scope and
  tenant is sound afterwards, else 6.`;

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
    const tenants = [...new Set(scopes.map((scope) => scope.tenant))];
    const lexical: { tenant: string; problems: readonly string[]; repair?: Omit<LexicalRepair, "after"> }[] = [];
    for (const tenant of tenants) {
      if (!flags.repair) {
        lexical.push({ tenant, problems: await memory.checkLexicalIndex(tenant) });
        continue;
      }
      const { after, ...repair } = await memory.repairLexicalIndex(tenant);
      lexical.push({ tenant, problems: after, repair });
    }
    const violations =
      results.reduce((sum, { check }) => sum + check.violations.length, 0) +
      lexical.reduce((sum, { problems }) => sum + problems.length, 0);
    output(options, { scopes: results, lexical, violations }, () =>
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
        ...lexical.map(({ tenant, problems, repair }) =>
          [
            `${tenant}: lexical index ${problems.length === 0 ? "agrees with the stored text" : `${problems.length} problem(s)`}`,
            ...(repair?.rebuilt ? [`  rebuilt from the stored text (${repair.before.length} problem(s) found)`] : []),
            ...problems.map((problem) => `  lexical: ${problem}`),
          ].join("\n"),
        ),
        results.length === 0
          ? "the store holds no scope"
          : `${violations} violation(s) in ${results.length} scope(s) and ${lexical.length} tenant(s)`,
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
