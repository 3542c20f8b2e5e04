import { warmTokenCounter } from "../../src/core/tokens.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { crashScope } from "./crash-sessions.ts";

/**
 * Child process of crash-loop.test.ts: forgets, oldest first, every stored session whose index is
 * `residue` modulo 4 and below `below` (sessions the ingesting child will never write again), until
 * killed; two children with residues 0 and 2 forget at once without ever naming the same session.
 * Prints `FORGETTING <sessionKey>` before each forget and `FORGOT <sessionKey>` only after it
 * resolved. Usage: node --import tsx crash-forget-child.ts <storeDir> <below> <residue>
 */
const [storeDir, below, residue] = process.argv.slice(2);
if (!storeDir || below === undefined || residue === undefined) {
  throw new Error("usage: crash-forget-child <store> <below> <residue>");
}

// Never outlive the parent: its end of stdin closing means it is gone.
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();

const memory = await Memory.open({ path: storeDir, models: createHashModels({ dimensions: 64 }) });
// A process that has been running a while: its token tables are loaded (a first count pays ~0.6 s,
// longer than most of the parent's kill delays, and then no write would ever be acknowledged).
warmTokenCounter();
process.stdout.write("READY\n");
const sessions = await memory.listSessions(crashScope, { limit: 100_000 });
for (const session of sessions) {
  const index = Number(session.key.slice(1));
  if (index % 4 !== Number(residue) || index >= Number(below)) continue;
  process.stdout.write(`FORGETTING ${session.key}\n`);
  await memory.forget(crashScope, { session: session.key });
  // A write to a pipe is synchronous on Linux: once this returns, the parent can read the line.
  process.stdout.write(`FORGOT ${session.key}\n`);
}
process.stdout.write("DONE\n");
await memory.close();
