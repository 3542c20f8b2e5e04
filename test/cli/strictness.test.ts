import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { cairnEntry } from "../support/compiled.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";

/** The CLI's entry: bin/cairn.js's module, compiled once for the run (test/support/compiled.ts). */
const bin = cairnEntry();

/** The CLI as a person runs it, in `cwd`, with only the CAIRN_* variables given here. */
function cairn(args: string[], { cwd, env = {} }: { cwd: string; env?: Record<string, string> }) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("CAIRN_")));
  const result = spawnSync(process.execPath, [bin, ...args], {
    encoding: "utf8",
    cwd,
    env: { ...clean, CAIRN_PROFILE: "hash", ...env },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function seeded(t: { after: (fn: () => void) => void }) {
  const dir = tempDir(t, "cairn-strict-");
  mkdirSync(join(dir, "img"));
  writeFile(dir, "img/kayak.png", await drawPng({ shape: "square", color: "#f80", background: "#39f" }));
  const line = {
    session: "s1",
    user: "ana",
    time: "2024-05-08T13:56:00Z",
    turns: [{ speaker: "Ana", text: "Our orange kayak on the lake", images: [{ path: "img/kayak.png" }] }],
  };
  writeFile(dir, "one.jsonl", `${JSON.stringify(line)}\n`);
  const ingest = cairn(["ingest", "one.jsonl", "--tenant", "acme", "--json"], { cwd: dir });
  assert.equal(ingest.code, 0, ingest.stderr);
  return dir;
}

describe("cairn CLI strictness", () => {
  it("refuses to read or write memory without a tenant, and creates no store", (t) => {
    const dir = tempDir(t, "cairn-strict-");
    for (const args of [
      ["search", "kayak"],
      ["ingest", "x.jsonl"],
      ["show", "raw_1"],
      ["forget", "--session", "s"],
    ]) {
      const result = cairn([...args, "--json"], { cwd: dir });
      assert.equal(result.code, 2, `${args[0]}: ${result.stderr}`);
      const { error } = JSON.parse(result.stderr);
      assert.equal(error.code, "input");
      assert.equal(error.field, "--tenant");
      assert.match(error.message, /CAIRN_TENANT/);
    }
    assert.equal(existsSync(join(dir, ".cairn")), false, "no store was created");
  });

  it("takes the tenant from the flag, then CAIRN_TENANT, then ./cairn.json", async (t) => {
    const dir = await seeded(t);
    const hits = (result: { code: number | null; stdout: string; stderr: string }) => {
      assert.equal(result.code, 0, result.stderr);
      return JSON.parse(result.stdout).items.length;
    };
    assert.ok(
      hits(cairn(["search", "kayak", "--user", "ana", "--json"], { cwd: dir, env: { CAIRN_TENANT: "acme" } })) > 0,
    );
    writeFile(dir, "cairn.json", JSON.stringify({ tenant: "acme", user: "ana" }));
    assert.ok(hits(cairn(["search", "kayak", "--json"], { cwd: dir })) > 0, "from cairn.json");
    // The flag wins over the file: another tenant's scope is empty, and says so by finding nothing.
    assert.equal(hits(cairn(["search", "kayak", "--tenant", "other", "--json"], { cwd: dir })), 0);
    // The environment wins over the file.
    assert.equal(hits(cairn(["search", "kayak", "--json"], { cwd: dir, env: { CAIRN_TENANT: "other" } })), 0);
  });

  it("rejects a config file with an unknown setting or a non-string value, naming it", async (t) => {
    const dir = tempDir(t, "cairn-strict-");
    writeFile(dir, "cairn.json", JSON.stringify({ tenant: "acme", tennant: "typo" }));
    const typo = cairn(["search", "x", "--json"], { cwd: dir });
    assert.equal(typo.code, 2);
    assert.equal(JSON.parse(typo.stderr).error.field, "config.tennant");
    writeFile(dir, "elsewhere.json", JSON.stringify({ tenant: 7 }));
    const number = cairn(["search", "x", "--json"], { cwd: dir, env: { CAIRN_CONFIG: "elsewhere.json" } });
    assert.equal(number.code, 2);
    assert.equal(JSON.parse(number.stderr).error.field, "config.tenant");
    const missing = cairn(["search", "x", "--json"], { cwd: dir, env: { CAIRN_CONFIG: "nope.json" } });
    assert.equal(missing.code, 2, "a named config file that is not there is an error, not ignored");
  });

  it("rejects flags the command does not take, flags before the command and extra arguments, with exit 2", (t) => {
    const dir = tempDir(t, "cairn-strict-");
    const foreign = cairn(["search", "kayak", "--tenant", "acme", "--port", "80", "--json"], { cwd: dir });
    assert.equal(foreign.code, 2, "serve's --port is not a search flag");
    assert.deepEqual(
      Object.keys(JSON.parse(foreign.stderr).error).sort(),
      ["code", "message"],
      "the shape HTTP and MCP use",
    );
    assert.match(JSON.parse(foreign.stderr).error.message, /--port/);
    assert.equal(cairn(["search", "kayak", "--tenant", "acme", "--kk", "3"], { cwd: dir }).code, 2, "a typo");
    const before = cairn(["--tenant", "acme", "search", "kayak"], { cwd: dir });
    assert.equal(before.code, 2);
    assert.match(before.stderr, /command comes first/);
    assert.equal(cairn(["show", "raw_1", "raw_2", "--tenant", "acme"], { cwd: dir }).code, 2);
    assert.equal(cairn(["serve", "--tenant", "acme"], { cwd: dir }).code, 2, "serve has no scope: keys give it");
    assert.equal(existsSync(join(dir, ".cairn")), false, "no store was created by any of them");
  });

  it("prints each command's own help, with exit 0", (t) => {
    const dir = tempDir(t, "cairn-strict-");
    const search = cairn(["search", "--help"], { cwd: dir });
    assert.equal(search.code, 0);
    assert.match(search.stdout, /--max-images/);
    assert.match(search.stdout, /--tenant/);
    assert.doesNotMatch(search.stdout, /--no-auth/, "not serve's flags");
    const serve = cairn(["help", "serve"], { cwd: dir });
    assert.equal(serve.code, 0);
    assert.match(serve.stdout, /--no-auth/);
    assert.doesNotMatch(serve.stdout, /Scope \(commands/, "serve takes no scope flags");
    const overview = cairn(["--help"], { cwd: dir });
    assert.match(overview.stdout, /cairn <command> --help/);
    assert.equal(cairn(["help", "frobnicate"], { cwd: dir }).code, 2);
  });

  it("show --save-images creates the folder it is given", async (t) => {
    const dir = await seeded(t);
    const found = JSON.parse(
      cairn(["search", "kayak", "--tenant", "acme", "--user", "ana", "--json"], { cwd: dir }).stdout,
    );
    const withImage = found.items.find((item: { images: unknown[] }) => item.images.length > 0);
    assert.ok(withImage, "the kayak turn is found");
    const out = join(dir, "saved/deeper");
    const shown = cairn(["show", withImage.rawNodeId, "--tenant", "acme", "--user", "ana", "--save-images", out], {
      cwd: dir,
    });
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal(readdirSync(out).length, 1);
  });
});
