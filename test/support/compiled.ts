import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import type * as TypeScript from "typescript";

/**
 * The repository's TypeScript compiled once to JavaScript, for the child processes tests start (the CLI, crash
 * children): each child then loads plain JavaScript instead of registering tsx and transforming on the fly, which
 * cost about 0.9 s of CPU in every process (2.3 s against 1.4 s for a small `cairn ingest` or `cairn search`),
 * and a run of the suite starts several hundred of them.
 *
 * The copy is never stale: it lives in a folder named by a hash of everything it is made from (src/ and
 * test/support/, package.json, the tsconfig files, this repository's path and the compiler's version), so an
 * edit anywhere gives a new folder, compiled by the first process that asks for it. The compiler is TypeScript
 * itself with tsconfig.build.json's options, the ones `npm run build` compiles the published package with (it
 * type-checks too; here `npm run typecheck` does), one file at a time: with those options the JavaScript is the
 * same, file for file, as dist/'s. The folder mirrors the checkout (src/, test/support/, package.json, and links
 * to examples/, node_modules/ and the ../shared beside the checkout), so every path a module finds relative to
 * itself finds what it finds in the checkout; non-TypeScript files under src/ (the dashboard's assets) are copied.
 *
 * CAIRN_TEST_TSX=1 turns it off: children then run from the sources through tsx, as before.
 */

const root = join(import.meta.dirname, "../..");
/** What is compiled; everything else a child reads is the checkout's own, through a link. */
const compiledDirs = ["src", "test/support"];

function filesUnder(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? filesUnder(path) : [path];
    });
}

let compiledRoot: string | null | undefined;

/** The compiled mirror of the checkout, or null when CAIRN_TEST_TSX=1 asks for the sources. */
export function compiledCheckout(): string | null {
  if (compiledRoot !== undefined) return compiledRoot;
  if (process.env.CAIRN_TEST_TSX === "1") {
    compiledRoot = null;
    return compiledRoot;
  }
  const require = createRequire(import.meta.url);
  const typescriptVersion = (require("typescript/package.json") as { version: string }).version;
  const inputs = [
    ...compiledDirs.flatMap((dir) => filesUnder(join(root, dir))),
    ...["package.json", "tsconfig.json", "tsconfig.build.json"].map((file) => join(root, file)),
  ];
  const hash = createHash("sha256").update(`${root}\0typescript ${typescriptVersion}\0`);
  for (const file of inputs)
    hash
      .update(`${relative(root, file)}\0`)
      .update(readFileSync(file))
      .update("\0");
  const base = join(tmpdir(), `cairn-compiled-${hash.digest("hex").slice(0, 20)}`);
  const mirror = join(base, "repo");
  if (!existsSync(join(base, "complete"))) build(base, require("typescript") as typeof TypeScript);
  compiledRoot = mirror;
  return compiledRoot;
}

/**
 * Compiles into a folder of this process's own, then renames it into place: two test files that ask at once
 * both compile (a few seconds), and the first rename wins; a half-written copy is never seen.
 */
function build(base: string, ts: typeof TypeScript): void {
  const scratch = `${base}.${process.pid}-${Date.now()}`;
  const mirror = join(scratch, "repo");
  const config = ts.getParsedCommandLineOfConfigFile(join(root, "tsconfig.build.json"), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
    },
  });
  if (!config) throw new Error("tsconfig.build.json could not be read");
  // NodeNext compiles a .ts file to ESM inside a "type": "module" package, which this is; compiled one file at a
  // time the compiler cannot look that up, so the module kind is stated. transpileModule's own default for an
  // unset jsx (preserve) is not tsc's (none), which changes one helper call's arguments: stated too.
  const compilerOptions = {
    ...config.options,
    module: ts.ModuleKind.ESNext,
    jsx: ts.JsxEmit.None,
    declaration: false,
    noEmit: false,
  };
  for (const dir of compiledDirs) {
    for (const file of filesUnder(join(root, dir))) {
      const target = join(mirror, relative(root, file));
      mkdirSync(dirname(target), { recursive: true });
      if (!file.endsWith(".ts")) {
        cpSync(file, target);
        continue;
      }
      const { outputText } = ts.transpileModule(readFileSync(file, "utf8"), { compilerOptions, fileName: file });
      writeFileSync(target.replace(/\.ts$/, ".js"), outputText);
    }
  }
  cpSync(join(root, "package.json"), join(mirror, "package.json"));
  for (const linked of ["examples", "node_modules"]) symlinkSync(join(root, linked), join(mirror, linked));
  symlinkSync(join(root, "../shared"), join(scratch, "shared"));
  writeFileSync(join(scratch, "complete"), "");
  try {
    renameSync(scratch, base);
  } catch (error) {
    // Another process's copy is in place already.
    rmSync(scratch, { recursive: true, force: true });
    if (!existsSync(join(base, "complete"))) throw error;
  }
  // Copies of sources long since edited (a day old: no run still uses them) are removed.
  for (const name of readdirSync(tmpdir())) {
    const path = join(tmpdir(), name);
    if (!name.startsWith("cairn-compiled-") || path === base) continue;
    const modified = statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
    if (Date.now() - modified > 86_400_000) rmSync(path, { recursive: true, force: true });
  }
}

/** The `cairn` CLI's entry for a child process: `bin/cairn.js` runs the same module after registering tsx. */
export function cairnEntry(): string {
  const compiled = compiledCheckout();
  return compiled ? join(compiled, "src/surfaces/cli/main.js") : join(root, "bin/cairn.js");
}

/**
 * `node` arguments that run the module at `path` (a .ts file of the checkout): the compiled copy of it, or the
 * source through tsx.
 */
export function moduleArgs(path: string): string[] {
  const compiled = compiledCheckout();
  if (!compiled) return ["--import", "tsx", path];
  return [join(compiled, relative(root, path)).replace(/\.ts$/, ".js")];
}
