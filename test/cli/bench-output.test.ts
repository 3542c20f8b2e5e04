import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { writeLocomoFixture } from "../bench/dataset-fixtures.ts";
import { cairnEntry } from "../support/compiled.ts";
import { tempDir, writeFile } from "../support/fixtures.ts";
import { postgresSkipReason } from "../support/postgres-cluster.ts";

/** The CLI's entry: bin/cairn.js's module, compiled once for the run (test/support/compiled.ts). */
const bin = cairnEntry();
const committed = "# Benchmarks\n\nthe committed full run\n";

function bench(cwd: string, args: string[], expectedStatus = 0) {
  const testServer = process.env.CAIRN_TEST_POSTGRES_URL;
  const result = spawnSync(
    process.execPath,
    [bin, "bench", "--dataset", "locomo", "--method", "bm25", "--profile", "hash", ...args],
    {
      cwd,
      encoding: "utf8",
      timeout: 120_000,
      // The Postgres case uses the tests' server when one is named, else a throwaway cluster.
      env: testServer ? { ...process.env, CAIRN_BENCH_POSTGRES_URL: testServer } : process.env,
    },
  );
  assert.equal(result.status, expectedStatus, result.stdout + result.stderr);
  return result;
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
    const written = readFileSync(join(cwd, "bench/results/tmp/BENCHMARKS.md"), "utf8");
    assert.match(written, /first 1 \(--limit\)/);
    // The command that reproduces the run, as typed.
    assert.match(written, /^npx cairn bench .*--limit 1 --data /m);

    const out = join(cwd, "elsewhere");
    bench(cwd, ["--out", out, "--data", data]);
    assert.equal(readFileSync(join(cwd, "BENCHMARKS.md"), "utf8"), committed);
    assert.ok(existsSync(join(out, "BENCHMARKS.md")));
  });

  it("--store refuses a backend it does not know with exit 2 and writes nothing", (t) => {
    const cwd = tempDir(t);
    const result = bench(cwd, ["--store", "mysql", "--data", join(cwd, "data")], 2);
    assert.match(result.stderr, /--store: unknown store mysql \(sqlite, postgres\)/);
    assert.ok(!existsSync(join(cwd, "bench")), "nothing written");
  });

  it("--store postgres replays into Postgres and keeps its results apart from the SQLite ones", {
    skip: postgresSkipReason(),
  }, async (t) => {
    const cwd = tempDir(t);
    const data = join(cwd, "data");
    await writeLocomoFixture(data);
    writeFile(cwd, "BENCHMARKS.md", committed);

    bench(cwd, ["--store", "postgres", "--data", data]);
    assert.equal(readFileSync(join(cwd, "BENCHMARKS.md"), "utf8"), committed);
    assert.ok(!existsSync(join(cwd, "bench/results/locomo-bm25.json")), "the SQLite result is not rewritten");
    const result = JSON.parse(readFileSync(join(cwd, "bench/results/postgres/locomo-bm25.json"), "utf8"));
    assert.equal(result.config.store.name, "postgres");
    assert.ok(result.summary.recallTurn > 0, "the Postgres store finds evidence");
    assert.ok(existsSync(join(cwd, "bench/results/postgres/BENCHMARKS.md")));
  });
});
