import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

const root = join(import.meta.dirname, "../..");
const commandsDir = join(root, "src/surfaces/cli/commands");

/** Runs the CLI from its sources with a hook that prints every module URL resolved. */
function cairn(args: string[]) {
  const result = spawnSync(
    process.execPath,
    [
      "--import",
      join(root, "test/support/log-resolutions.mjs"),
      "--import",
      "tsx",
      join(root, "src/surfaces/cli/main.ts"),
      ...args,
    ],
    { cwd: root, encoding: "utf8", timeout: 60_000 },
  );
  const resolved = result.stderr
    .split("\n")
    .flatMap((line) => (line.startsWith("resolved ") ? [line.slice("resolved ".length)] : []));
  return { code: result.status, stdout: result.stdout, stderr: result.stderr, resolved };
}

describe("cairn --help", () => {
  const usage = cairn(["--help"]);

  it("loads none of the engine or its libraries: a command's module is imported only when it runs", () => {
    assert.equal(usage.code, 0, usage.stderr);
    assert.ok(
      usage.resolved.some((url) => url.endsWith("/src/surfaces/cli/main.ts")),
      "the hook saw the CLI load",
    );
    const heavy = usage.resolved.filter((url) =>
      /\/src\/(memory|bench|surfaces\/http|surfaces\/mcp|video)\b|\/src\/surfaces\/cli\/commands\/|\/node_modules\/(hono|zod|gpt-tokenizer|sharp|@modelcontextprotocol|better-sqlite3|pg|vega)/.test(
        url,
      ),
    );
    assert.deepEqual(heavy, []);
  });

  it("lists every command by the first line of that command's own help", async () => {
    const listed = usage.stdout.split("\n").map((line) => line.trim());
    let helps = 0;
    for (const file of readdirSync(commandsDir).filter((name) => name.endsWith(".ts"))) {
      const module = (await import(join(commandsDir, file))) as Record<string, unknown>;
      for (const [name, value] of Object.entries(module)) {
        if (!name.endsWith("Help") || typeof value !== "string") continue;
        helps++;
        const first = value.split("\n")[0] ?? "";
        assert.ok(listed.includes(first), `cairn --help lists ${JSON.stringify(first)} (${file}: ${name})`);
      }
    }
    assert.ok(helps >= 15, `found the commands' help texts (${helps})`);
  });

  // The other CLI tests start a compiled copy of the CLI (test/support/compiled.ts); bin/cairn.js itself, in a
  // checkout, registers tsx and runs the sources.
  it("bin/cairn.js in a checkout runs the CLI from its TypeScript sources", () => {
    const result = spawnSync(
      process.execPath,
      ["--import", join(root, "test/support/log-resolutions.mjs"), join(root, "bin/cairn.js"), "search", "--help"],
      { cwd: root, encoding: "utf8", timeout: 60_000 },
    );
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /^cairn search "<text>"/);
    assert.ok(result.stderr.includes(`resolved ${new URL("src/surfaces/cli/commands/search.ts", `file://${root}/`)}`));
  });

  it("shows one command's help, loading that command", () => {
    const search = cairn(["search", "--help"]);
    assert.equal(search.code, 0, search.stderr);
    assert.match(search.stdout, /^cairn search "<text>"/);
    assert.ok(search.resolved.some((url) => url.endsWith("/src/surfaces/cli/commands/search.ts")));
  });
});
