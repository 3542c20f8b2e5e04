import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { writeLocomoFixture } from "../bench/dataset-fixtures.ts";
import { tempDir, writeFile } from "../support/fixtures.ts";

const bin = join(import.meta.dirname, "../../bin/cairn.js");
const committed = "# Benchmarks\n\nthe committed full run\n";

function bench(cwd: string, args: string[]) {
  const result = spawnSync(
    process.execPath,
    [bin, "bench", "--dataset", "locomo", "--method", "bm25", "--profile", "hash", ...args],
    { cwd, encoding: "utf8", timeout: 120_000 },
  );
  assert.equal(result.status, 0, result.stdout + result.stderr);
}

describe("cairn bench output", () => {
  it("a run with --limit or --out leaves the committed BENCHMARKS.md and results alone", async (t) => {
    const cwd = tempDir(t);
    const data = join(cwd, "data");
    await writeLocomoFixture(data);
    writeFile(cwd, "BENCHMARKS.md", committed);

    bench(cwd, ["--limit", "1", "--data", data]);
    assert.equal(readFileSync(join(cwd, "BENCHMARKS.md"), "utf8"), committed);
    assert.ok(!existsSync(join(cwd, "bench/results/locomo-bm25.json")), "no committed result is rewritten");
    assert.ok(existsSync(join(cwd, "bench/results/tmp/locomo-bm25.json")));
    assert.match(readFileSync(join(cwd, "bench/results/tmp/BENCHMARKS.md"), "utf8"), /first 1 \(--limit\)/);

    const out = join(cwd, "elsewhere");
    bench(cwd, ["--out", out, "--data", data]);
    assert.equal(readFileSync(join(cwd, "BENCHMARKS.md"), "utf8"), committed);
    assert.ok(existsSync(join(out, "BENCHMARKS.md")));
  });
});
