import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

/** URLs a fresh Node process resolves while running `script` with the package's sources. */
function resolvedBy(script: string): string[] {
  const child = spawnSync(
    process.execPath,
    [
      "--import",
      join(root, "test/support/log-resolutions.mjs"),
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      script,
    ],
    { cwd: root, encoding: "utf8" },
  );
  assert.equal(child.status, 0, child.stderr);
  return child.stderr
    .split("\n")
    .flatMap((line) => (line.startsWith("resolved ") ? [line.slice("resolved ".length)] : []));
}

describe("the embedded backend loads lazily", () => {
  it("importing the package loads no SQLite; opening the default store does", () => {
    const onImport = resolvedBy('await import("./src/index.ts");');
    assert.ok(
      onImport.some((url) => url.endsWith("/src/memory.ts")),
      "the hook saw the package load",
    );
    assert.deepEqual(
      onImport.filter((url) =>
        /better-sqlite3|sqlite-vec|\/store\/sqlite\/|\/node_modules\/pg|\/store\/postgres\//.test(url),
      ),
      [],
    );
    // Through `openStore`, as `--db` does: a folder opens SQLite and never loads the Postgres client.
    const onOpen = resolvedBy(
      'const { openStore } = await import("./src/index.ts"); const { mkdtempSync, rmSync } = await import("node:fs"); const { tmpdir } = await import("node:os"); const dir = mkdtempSync(tmpdir() + "/cairn-lazy-"); const store = await openStore(dir); await store.close(); rmSync(dir, { recursive: true });',
    );
    assert.ok(
      onOpen.some((url) => url.includes("better-sqlite3")),
      "opening the store loads its driver",
    );
    assert.deepEqual(
      onOpen.filter((url) => /\/node_modules\/pg|\/store\/postgres\//.test(url)),
      [],
      "a SQLite user never loads pg",
    );
  });

  it("the CLI's bench command loads pg only for --store postgres", () => {
    const onImport = resolvedBy('await import("./src/surfaces/cli/commands/bench.ts");');
    assert.ok(
      onImport.some((url) => url.endsWith("/src/bench/bench-store.ts")),
      "the hook saw the command load",
    );
    assert.deepEqual(
      onImport.filter((url) => /\/node_modules\/pg|\/store\/postgres\/|\/bench\/postgres\//.test(url)),
      [],
    );
  });

  // `ai` is an optional peer dependency: a user of the core has not installed it.
  it("the AI SDK loads only through the ai-sdk entry point", () => {
    const aiSdk = /\/node_modules\/(ai|@ai-sdk\/[^/]+)\//;
    const onImport = resolvedBy('await import("./src/index.ts");');
    assert.deepEqual(
      onImport.filter((url) => aiSdk.test(url)),
      [],
    );
    const onEntry = resolvedBy('await import("./src/surfaces/ai-sdk/index.ts");');
    assert.ok(
      onEntry.some((url) => /\/node_modules\/ai\//.test(url)),
      "the entry point loads ai",
    );
  });
});
