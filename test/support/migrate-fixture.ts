import assert from "node:assert/strict";
import { join } from "node:path";
import { cairnProcess } from "./cairn-process.ts";

const examples = join(import.meta.dirname, "../../examples/demo.jsonl");

/** The `cairn` CLI with the hash models and room for a slow copy. */
export const cairnHash = (args: string[]) => cairnProcess([...args, "--profile", "hash"], { timeoutMs: 180_000 });

/** The questions both migrate tests ask of a source and its copy. */
export const migrateQueries = ["where did Ana go kayaking?", "the orange boat", "wedding in October"] as const;

/**
 * The demo memory (tenant demo, user ana) in `db`, with one session forgotten: the redacted audit
 * events and the repaired index a forget leaves must copy as they are.
 */
export async function demoSourceWithForget(db: string): Promise<void> {
  const ingested = await cairnHash(["ingest", examples, "--db", db, "--tenant", "demo", "--user", "ana"]);
  assert.equal(ingested.code, 0, ingested.stderr);
  const forgot = await cairnHash([
    ...["forget", "--db", db, "--tenant", "demo", "--user", "ana"],
    ...["--session", "2024-03-02-bike", "--yes"],
  ]);
  assert.equal(forgot.code, 0, forgot.stderr);
}

/** The demo user's search as `[raw-node id, score]` pairs. */
export async function demoSearch(db: string, query: string): Promise<[string, number][]> {
  const result = await cairnHash(["search", query, "--db", db, "--tenant", "demo", "--user", "ana", "--json"]);
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout).items.map((item: { rawNodeId: string; score: number }) => [
    item.rawNodeId,
    item.score,
  ]);
}
