import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { describe, it } from "node:test";
import { tempDir } from "../support/fixtures.ts";

const storeModule = resolve(import.meta.dirname, "../../src/store/sqlite/sqlite-store.ts");

/** One process opening (and so migrating) the store at `path` at time `at`; resolves with its exit code and stderr. */
function openIn(path: string, at: number): Promise<{ code: number | null; stderr: string }> {
  // Each process loads first, then waits for the same moment: the opens overlap, not the start-ups.
  const script = `const { SqliteStore } = await import(${JSON.stringify(storeModule)});
    await new Promise((ready) => setTimeout(ready, ${at} - Date.now()));
    const store = await SqliteStore.open({ path: ${JSON.stringify(path)} });
    await store.close();`;
  return new Promise((done) => {
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("close", (code) => done({ code, stderr }));
  });
}

describe("a new SQLite store opened by several processes at once", () => {
  it("is migrated once, and every process opens it", async (t) => {
    const path = join(tempDir(t), "store");
    const at = Date.now() + 4_000;
    const results = await Promise.all(Array.from({ length: 6 }, () => openIn(path, at)));
    for (const result of results) assert.equal(result.code, 0, result.stderr);
  });
});
