import { warmTokenCounter } from "../../src/core/tokens.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { crashScope, crashSessionInput, crashSessionPlan, ensureCrashImages } from "./crash-sessions.ts";

/**
 * Child process of crash-safety.test.ts: ingests sessions from index `start` on, until killed,
 * printing `ACK <sessionKey> <raw node count> <duplicate>` only after addSession resolved. With
 * `batch` above 1, `batch` sessions a call through addSessions, each acknowledged once the call resolved.
 * Usage: node --import tsx crash-ingest-child.ts <storeDir> <inputDir> <start> [batch]
 */
const [storeDir, inputDir, start, batchArg] = process.argv.slice(2);
const batch = Number(batchArg ?? 1);
if (!storeDir || !inputDir || start === undefined) throw new Error("usage: crash-ingest-child <store> <input> <start>");

// Never outlive the parent: its end of stdin closing means it is gone.
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();

const memory = await Memory.open({ path: storeDir, models: createHashModels({ dimensions: 64 }) });
// A process that has been running a while: its token tables are loaded (a first count pays ~0.6 s,
// longer than most of the parent's kill delays, and then no write would ever be acknowledged).
warmTokenCounter();
process.stdout.write("READY\n");
for (let index = Number(start); index < Number(start) + 10_000; index += batch) {
  const inputs = [];
  for (let position = index; position < index + batch; position++) {
    const plan = crashSessionPlan(position);
    await ensureCrashImages(plan, inputDir);
    inputs.push(crashSessionInput(plan));
  }
  const results =
    batch > 1
      ? await memory.addSessions(crashScope, inputs, { baseDir: inputDir })
      : [await memory.addSession(crashScope, inputs[0], { baseDir: inputDir })];
  // A write to a pipe is synchronous on Linux: once this returns, the parent can read the line.
  for (const result of results) {
    process.stdout.write(`ACK ${result.sessionKey} ${result.rawNodeIds.length} ${result.duplicate}\n`);
  }
}
await memory.close();
