import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import BetterSqlite3 from "better-sqlite3";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { startCrashChild } from "../support/crash-child.ts";
import { crashScope, crashSessionPlan } from "../support/crash-sessions.ts";
import { tempDir } from "../support/fixtures.ts";
import { seededRandom } from "../support/random.ts";
import { checkFtsIntegrity } from "../support/sqlite-fts.ts";

/**
 * A writer SIGKILLed at random moments, round after round, must leave a store in which every
 * acknowledged session is whole, no session is partial, no blob file is orphaned, and SQLite
 * reports no corruption. Set CAIRN_CRASH_SEED to replay a run.
 */

const repoRoot = resolve(import.meta.dirname, "../..");
const childScript = join(repoRoot, "test/support/crash-ingest-child.ts");
const rounds = 5;
const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");

interface Round {
  readonly acks: { key: string; rawNodes: number; duplicate: boolean }[];
  readonly stderr: string;
  readonly killed: boolean;
}

/**
 * Starts the child, waits until its store is open, lets it ingest for `delayMs` (running `meanwhile`
 * alongside, if given), then SIGKILLs it.
 */
async function runRound(
  batch: number,
  storeDir: string,
  inputDir: string,
  start: number,
  delayMs: number,
  meanwhile?: (until: number) => Promise<void>,
): Promise<Round> {
  const child = await startCrashChild([childScript, storeDir, inputDir, String(start), String(batch)], {
    readyTimeoutMs: 20_000,
  });
  let killed = false;
  try {
    await (meanwhile ? meanwhile(Date.now() + delayMs) : sleep(delayMs));
  } finally {
    killed = await child.kill();
  }
  const acks = child
    .lines()
    .filter((line) => line.startsWith("ACK "))
    .map((line) => {
      const [, key, rawNodes, duplicate] = line.split(" ");
      return { key: key as string, rawNodes: Number(rawNodes), duplicate: duplicate === "true" };
    });
  return { acks, stderr: child.stderr(), killed };
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1));
}

/**
 * Kills a writer (`batch` sessions a call: 1 = addSession, more = addSessions) round after round,
 * then checks the store: acknowledged sessions whole, no partial session, no partial batch, no
 * orphan file, no corruption.
 */
async function killedWriter(t: TestContext, batch: number): Promise<void> {
  const seed = Number(process.env.CAIRN_CRASH_SEED ?? Math.floor(Math.random() * 1_000_000));
  const next = seededRandom(seed);
  const root = tempDir(t, "cairn-crash-");
  const storeDir = join(root, "store");
  const inputDir = join(root, "input");
  mkdirSync(inputDir);
  const context = `(seed ${seed}; replay with CAIRN_CRASH_SEED=${seed})`;

  const acked = new Map<string, number>();
  let start = 0;
  // On a loaded machine a kill can land before the child acknowledged anything: extra rounds (a few
  // at most) until the kills have interrupted enough acknowledged work to mean something.
  let round = 0;
  for (; round < rounds || (acked.size < rounds && round < rounds * 4); round++) {
    const delayMs = 50 + Math.floor(next() * 550);
    const result = await runRound(batch, storeDir, inputDir, start, delayMs);
    assert.ok(result.killed, `round ${round}: the child died before it was killed ${context}: ${result.stderr}`);
    for (const ack of result.acks) {
      assert.equal(ack.rawNodes, crashSessionPlan(Number(ack.key.slice(1))).turns.length, `ACK ${ack.key}`);
      acked.set(ack.key, ack.rawNodes);
    }
    // Carry on after the last acknowledged session: the next one may or may not have been committed.
    const last = Math.max(-1, ...result.acks.map((ack) => Number(ack.key.slice(1))));
    start = Math.max(start, last + 1);
  }
  assert.ok(acked.size >= rounds, `the child acknowledged only ${acked.size} sessions in ${round} rounds ${context}`);
  t.diagnostic(`${acked.size} sessions acknowledged over ${round} kills ${context}`);

  const journals = filesUnder(join(storeDir, "pending")).length;
  if (journals > 0) t.diagnostic(`the last kill left ${journals} write journal(s) to recover`);
  const memory = await Memory.open({ path: storeDir, models: createHashModels({ dimensions: 64 }) });
  let closed = false;
  t.after(async () => {
    if (!closed) await memory.close();
  });
  assert.deepEqual(filesUnder(join(storeDir, "pending")), [], `write journals are settled on open ${context}`);
  const check = await memory.checkIndex(crashScope);
  assert.deepEqual(check.violations, [], `the active index keeps its invariants ${context}`);
  const pointed = new Set((await memory.listEntries(crashScope)).flatMap((entry) => entry.pointers));

  const checkWhole = async (key: string) => {
    const plan = crashSessionPlan(Number(key.slice(1)));
    const session = await memory.getSession(crashScope, key).catch(() => null);
    assert.ok(session, `acknowledged session ${key} is missing ${context}`);
    const nodes = await memory.listRawNodes(crashScope, session.id);
    assert.equal(session.turnCount, plan.turns.length, `${key} turn count ${context}`);
    assert.equal(nodes.length, plan.turns.length, `${key} is partial: ${nodes.length} raw nodes ${context}`);
    assert.equal(
      session.imageCount,
      plan.turns.reduce((sum, turn) => sum + turn.images.length, 0),
    );
    for (const [turn, node] of nodes.entries()) {
      const expected = plan.turns[turn];
      assert.ok(expected);
      assert.equal(node.text, expected.text);
      assert.equal(node.speaker, expected.speaker);
      assert.equal(node.images.length, expected.images.length, `${key} turn ${turn} images ${context}`);
      for (const [position, image] of node.images.entries()) {
        const inputFile: string = expected.images[position]?.file ?? "";
        const original = readFileSync(join(inputDir, inputFile));
        assert.equal(image.hash, sha256(original));
        const blob = await memory.getBlob(crashScope, image.hash);
        assert.deepEqual(Buffer.from(blob.data), original, `${key} turn ${turn}: stored image bytes ${context}`);
        assert.ok((await memory.getBlob(crashScope, image.hash, { thumbnail: true })).data.length > 0);
      }
    }
    for (const node of nodes) assert.ok(pointed.has(node.id), `${key}: raw node ${node.id} has no entry ${context}`);
  };

  for (const key of acked.keys()) await checkWhole(key);
  // Sessions committed but not acknowledged (killed between commit and ACK) must be whole too.
  const stored = await memory.listSessions(crashScope);
  for (const session of stored) await checkWhole(session.key);
  assert.ok(stored.length >= acked.size);
  assert.equal(check.rawNodes, pointed.size, "entries point at stored raw nodes only");
  const stats = await memory.stats(crashScope);
  assert.equal(
    stats.rawNodes,
    stored.reduce((sum, session) => sum + session.turnCount, 0),
  );
  await memory.close();
  closed = true;

  const db = new BetterSqlite3(join(storeDir, "cairn.db"));
  t.after(() => db.close());
  assert.deepEqual(db.pragma("integrity_check"), [{ integrity_check: "ok" }], `SQLite integrity ${context}`);
  assert.ok(checkFtsIntegrity(db).length > 0, `FTS5 integrity ${context}`);
  assert.deepEqual(db.pragma("foreign_key_check"), []);
  // Files live under one folder per owning tenant: blobs/<tenant token>/<ab>/<hash>.
  const rows = new Set(
    (db.prepare("SELECT tenant, hash FROM blobs").all() as { tenant: string; hash: string }[]).map((row) =>
      join(row.tenant, row.hash.slice(0, 2), row.hash),
    ),
  );
  // Recovery on open also removes the half-written `<hash>.<uuid>.tmp` files of a killed writer.
  const blobFiles = filesUnder(join(storeDir, "blobs"));
  const thumbFiles = filesUnder(join(storeDir, "thumbs"));
  assert.deepEqual(new Set(blobFiles), rows, `blob files match blob rows: no orphans, none missing ${context}`);
  assert.deepEqual(new Set(thumbFiles), new Set([...rows].map((path) => `${path}.webp`)), `thumbnails ${context}`);
  for (const path of blobFiles) {
    assert.equal(sha256(readFileSync(join(storeDir, "blobs", path))), basename(path), "blob bytes");
  }
  if (batch > 1) {
    // Every round starts after an acknowledged call, so calls always cover [k·batch, (k+1)·batch).
    const storedKeys = new Set(stored.map((session) => Number(session.key.slice(1))));
    for (const key of storedKeys) {
      const first = key - (key % batch);
      const call = Array.from({ length: batch }, (_, offset) => first + offset);
      assert.ok(
        call.every((index) => storedKeys.has(index)),
        `the call of s${first}..s${first + batch - 1} landed in part ${context}`,
      );
    }
  }
}

describe("crash safety", () => {
  it("a writer killed at random moments leaves only whole sessions, no orphan files, no corruption", async (t) => {
    await killedWriter(t, 1);
  });

  it("a writer of several sessions a call (addSessions) killed at random moments leaves only whole calls", async (t) => {
    await killedWriter(t, 4);
  });

  it("opening the store in another process while a writer ingests loses none of the writer's images", async (t) => {
    const root = tempDir(t, "cairn-concurrent-open-");
    const storeDir = join(root, "store");
    const inputDir = join(root, "input");
    mkdirSync(inputDir);
    let opens = 0;
    // A reader (`cairn search`, a dashboard) opening the same store again and again during ingest.
    const reopenUntil = async (until: number) => {
      while (Date.now() < until) {
        await (await SqliteStore.open({ path: storeDir })).close();
        opens++;
        await sleep(1);
      }
    };
    const round = await runRound(1, storeDir, inputDir, 0, 1_500, reopenUntil);
    assert.ok(round.acks.length > 0 && opens > 0, `${round.acks.length} sessions, ${opens} opens`);

    const memory = await Memory.open({ path: storeDir, models: createHashModels({ dimensions: 64 }) });
    t.after(() => memory.close());
    const lost: string[] = [];
    for (const ack of round.acks) {
      const session = await memory.getSession(crashScope, ack.key).catch(() => null);
      assert.ok(session, `acknowledged ${ack.key} is missing`);
      for (const node of await memory.listRawNodes(crashScope, session.id)) {
        for (const { hash } of node.images) {
          assert.ok(hash, "the crash fixture only writes images with pixels");
          await memory.getBlob(crashScope, hash).catch(() => lost.push(`${ack.key}:${hash.slice(0, 8)}`));
        }
      }
    }
    assert.deepEqual(lost, [], `images of acknowledged sessions lost after ${opens} concurrent opens`);
  });
});
