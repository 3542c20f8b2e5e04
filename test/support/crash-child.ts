import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { moduleArgs } from "./compiled.ts";

const repoRoot = resolve(import.meta.dirname, "../..");

/** A writer in a child process that a crash test SIGKILLs. */
export interface CrashChild {
  /** Lines it has printed in full: a line without its newline was not acknowledged. */
  readonly lines: () => string[];
  readonly stderr: () => string;
  /** SIGKILLs it; true when the kill is what ended it (it was still running). */
  readonly kill: () => Promise<boolean>;
}

/**
 * Starts `node <module> <args>` from the repository root (the module compiled, see test/support/compiled.ts)
 * and waits until it prints `READY`, so a kill always lands in the work, not in start-up; a child that never gets
 * ready is an error.
 */
export async function startCrashChild(
  args: readonly string[],
  options: { readonly readyTimeoutMs: number },
): Promise<CrashChild> {
  const [module = "", ...rest] = args;
  const child: ChildProcess = spawn(process.execPath, [...moduleArgs(module), ...rest], {
    cwd: repoRoot,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<NodeJS.Signals | null>((done) => child.on("close", (_code, signal) => done(signal)));
  const started = Date.now();
  while (!stdout.includes("READY\n")) {
    if (child.exitCode !== null || Date.now() - started > options.readyTimeoutMs) {
      child.kill("SIGKILL");
      throw new Error(`crash child did not start: ${stderr}`);
    }
    await sleep(5);
  }
  return {
    lines: () => stdout.split("\n").slice(0, -1),
    stderr: () => stderr,
    kill: async () => {
      child.kill("SIGKILL");
      return (await exited) === "SIGKILL";
    },
  };
}
