import { type ChildProcess, spawn } from "node:child_process";
import { cairnEntry } from "./compiled.ts";

/** The CLI's entry: bin/cairn.js's module, compiled once for the run (test/support/compiled.ts). */
const bin = cairnEntry();

export interface ServeProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<number | null>;
  output(): string;
}

/** `cairn serve` as a child process on a free port; resolves once it prints its URL. */
export async function spawnServe(
  t: { after: (fn: () => void) => void },
  args: string[],
  env: Record<string, string> = {},
): Promise<ServeProcess> {
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--profile", "hash", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  t.after(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  let output = "";
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1] as string);
    });
    exited.then((code) => reject(new Error(`serve exited with ${code} before listening:\n${output}`)));
  });
  return { child, url, exited, output: () => output };
}
