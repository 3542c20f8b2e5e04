import { spawn } from "node:child_process";
import { cairnEntry } from "./compiled.ts";

/** The CLI's entry: bin/cairn.js's module, compiled once for the run (test/support/compiled.ts). */
const bin = cairnEntry();

/**
 * The `cairn` CLI as a child process, without blocking this one: a test that also talks to a
 * server keeps its event loop free (a blocked loop cannot retire idle keep-alive sockets), and a
 * hang past `timeoutMs` is a failure, not a stuck suite.
 */
export function cairnProcess(
  args: readonly string[],
  options: { readonly timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { timeout: options.timeoutMs ?? 60_000 });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
