import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { type CrashChild, startCrashChild } from "./crash-child.ts";
import { crashMarker, crashScope, crashSessionPlan } from "./crash-sessions.ts";
import { seededRandom } from "./random.ts";

/**
 * The crash loop (issue 18, part 5; issue 11, part 3), for any store location: a folder or a
 * `postgres://` URL. An ingesting child and two forgetting children work on one store at once and
 * are SIGKILLed at random moments, round after round. Then, through a fresh `Memory` on the same
 * location: no acknowledged session is lost or partial, no session whose forget was acknowledged
 * is back, every stored session is whole (texts, images and their bytes), the index keeps its
 * invariants and the survivors are searchable. What only a backend can check (files, integrity
 * pragmas, `cairn check --db`) is the caller's, given the markers of every forgotten turn.
 */

const repoRoot = resolve(import.meta.dirname, "../..");
const ingestChild = join(repoRoot, "test/support/crash-ingest-child.ts");
const forgetChild = join(repoRoot, "test/support/crash-forget-child.ts");
const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");

export interface CrashLoopResult {
  readonly killed: { readonly ingest: number; readonly forget: number };
  readonly acknowledged: number;
  readonly forgotten: number;
  /** The markers of every turn of a session that was acknowledged or being forgotten and is gone now. */
  readonly goneMarkers: readonly string[];
  /** "(seed N; replay with CAIRN_CRASH_SEED=N)", for assertion messages. */
  readonly context: string;
  /** The recovered store, open: the caller closes it. */
  readonly memory: Memory;
}

/**
 * Starts every child, or none: when one fails to get ready, the others are killed before the error
 * is thrown (a child left running holds the test process open, and its pipes, for ever).
 */
async function startAll(
  commands: readonly [readonly string[], ...(readonly string[])[]],
): Promise<[CrashChild, ...CrashChild[]]> {
  const started = await Promise.allSettled(commands.map((args) => startCrashChild(args, { readyTimeoutMs: 60_000 })));
  const failed = started.find((result) => result.status === "rejected");
  if (!failed) {
    return started.map((result) => (result as PromiseFulfilledResult<CrashChild>).value) as [
      CrashChild,
      ...CrashChild[],
    ];
  }
  for (const result of started) if (result.status === "fulfilled") await result.value.kill();
  throw failed.reason;
}

/** The most extra time a round gives the ingesting child (see `ingestGrace`). */
const maxIngestGrace = 3_200;

export async function runCrashLoop(options: {
  /** A store folder or a `postgres://` URL. */
  readonly location: string;
  /** A folder the ingesting child draws its images in. */
  readonly inputDir: string;
  readonly kills: number;
  readonly diagnostic: (message: string) => void;
}): Promise<CrashLoopResult> {
  const { location, inputDir, kills } = options;
  const seed = Number(process.env.CAIRN_CRASH_SEED ?? Math.floor(Math.random() * 1_000_000));
  const next = seededRandom(seed);
  const context = `(seed ${seed}; replay with CAIRN_CRASH_SEED=${seed})`;

  const acked = new Set<string>();
  const forgotten = new Set<string>();
  /** Forgets begun but not acknowledged: the session may be there, whole, or gone. */
  const maybeForgotten = new Set<string>();
  const killed = { ingest: 0, forget: 0 };
  let below = 0;
  // Extra time the ingesting child gets before its kill, doubled after each round in which it
  // acknowledged nothing: on a loaded machine a commit can take longer than every kill delay, and a
  // loop that never lets one finish tests nothing (and cannot check survivors).
  let ingestGrace = 0;
  for (let round = 0; killed.ingest + killed.forget < kills && round < kills * 3; round++) {
    // Both children at once: the forgetting one takes sessions the ingesting one never writes again.
    const [ingest, ...forgets] = await startAll([
      [ingestChild, location, inputDir, String(below)],
      [forgetChild, location, String(below), "0"],
      [forgetChild, location, String(below), "2"],
    ]);
    const killAt = [10 + Math.floor(next() * 150), 10 + Math.floor(next() * 150)];
    const ingestAt = Math.max(...killAt) + Math.floor(next() * 100) + ingestGrace;
    await Promise.all(
      forgets.map(async (forget, index) => {
        await sleep(killAt[index] ?? 0);
        if (await forget.kill()) killed.forget++;
      }),
    );
    await sleep(ingestAt - Math.max(...killAt));
    if (await ingest.kill()) killed.ingest++;
    for (const line of forgets.flatMap((forget) => forget.lines())) {
      const [word, key = ""] = line.split(" ");
      if (word === "FORGETTING") maybeForgotten.add(key);
      if (word === "FORGOT") {
        forgotten.add(key);
        maybeForgotten.delete(key);
      }
    }
    let last = below - 1;
    for (const line of ingest.lines()) {
      const [word, key = "", rawNodes] = line.split(" ");
      if (word !== "ACK") continue;
      assert.equal(Number(rawNodes), crashSessionPlan(Number(key.slice(1))).turns.length, `ACK ${key} ${context}`);
      acked.add(key);
      last = Math.max(last, Number(key.slice(1)));
    }
    ingestGrace = last >= below ? 0 : Math.min(maxIngestGrace, Math.max(100, ingestGrace * 2));
    // Carry on after the last acknowledged session: the next one may or may not have been committed.
    below = last + 1;
  }
  options.diagnostic(
    `${killed.ingest} kills during ingest, ${killed.forget} during forget; ${acked.size} sessions acknowledged, ${forgotten.size} forgets acknowledged ${context}`,
  );
  assert.ok(killed.ingest + killed.forget >= kills, `only ${killed.ingest + killed.forget} kills ${context}`);
  assert.ok(killed.forget >= kills / 4, `only ${killed.forget} kills interrupted a forget ${context}`);

  const memory = await Memory.open({ path: location, models: createHashModels({ dimensions: 64 }) });
  try {
    const check = await memory.checkIndex(crashScope);
    assert.deepEqual(check.violations, [], `the active index keeps its invariants ${context}`);
    assert.deepEqual(
      await memory.checkLexicalIndex(crashScope.tenant),
      [],
      `the lexical index and its statistics match the stored text ${context}`,
    );
    const stored = new Map((await memory.listSessions(crashScope, { limit: 100_000 })).map((s) => [s.key, s]));
    for (const key of forgotten) assert.ok(!stored.has(key), `forgotten session ${key} is back ${context}`);
    for (const key of acked) {
      if (forgotten.has(key) || maybeForgotten.has(key)) continue;
      assert.ok(stored.has(key), `acknowledged session ${key} is missing ${context}`);
    }
    for (const [key, session] of stored) {
      const nodes = await memory.listRawNodes(crashScope, session.id);
      const plan = crashSessionPlan(Number(key.slice(1)));
      assert.deepEqual(
        nodes.map((node) => node.text),
        plan.turns.map((turn) => turn.text),
        `${key} is whole ${context}`,
      );
      for (const [turn, node] of nodes.entries()) {
        const expected = plan.turns[turn]?.images ?? [];
        assert.equal(node.images.length, expected.length, `${key} turn ${turn} images ${context}`);
        for (const [position, image] of node.images.entries()) {
          const original = readFileSync(join(inputDir, expected[position]?.file ?? ""));
          assert.equal(image.hash, sha256(original), `${key} turn ${turn} image hash ${context}`);
          const blob = await memory.getBlob(crashScope, image.hash ?? "");
          assert.deepEqual(Buffer.from(blob.data), original, `${key} turn ${turn}: stored image bytes ${context}`);
        }
      }
    }
    const gone = [...acked, ...maybeForgotten].filter((key) => !stored.has(key));
    const goneMarkers = gone.flatMap((key) => {
      const plan = crashSessionPlan(Number(key.slice(1)));
      return plan.turns.map((_, turn) => crashMarker(plan.index, turn));
    });
    // With a handful of kills under load a forgetting child may be killed before its first forget.
    if (forgotten.size > 0) assert.ok(goneMarkers.length > 0, `forgotten turns to look for ${context}`);
    assert.ok((await memory.search(crashScope, "heron pebbles")).items.length > 0, "the survivors are searchable");
    return { killed, acknowledged: acked.size, forgotten: forgotten.size, goneMarkers, context, memory };
  } catch (error) {
    await memory.close();
    throw error;
  }
}
