// Opens a store with a read pool, searches, closes, and then does nothing: the test checks the process exits.
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";

const store = await SqliteStore.open({ path: process.argv[2] as string, readWorkers: 2 });
const memory = await Memory.open({ store, models: createHashModels() });
const pack = await memory.search({ tenant: "acme", user: "ana" }, "kayak near Oslo");
const workers = store.readWorkers;
await memory.close();
process.stdout.write(`closed after ${pack.items.length} item(s) from ${workers} worker(s)\n`);
