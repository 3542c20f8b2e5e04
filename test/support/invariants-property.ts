import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import fc from "fast-check";
import { ConflictError, InputError, NotFoundError } from "../../src/core/errors.ts";
import type { Scope } from "../../src/core/scope.ts";
import { Memory, scopedStore } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { tenantStorage } from "../../src/store/sqlite/tenants.ts";
import { drawPng } from "./fixtures.ts";

/**
 * Random sequences of addSession / forget / search over three scopes, checked after every
 * step against a model of what was added and forgotten:
 * - invariant 1: every raw node still present is exactly what was added; blob bytes hash to their name;
 * - invariant 4: a scope never sees another scope's ids, texts or blobs, and foreign ids answer NotFoundError;
 * - invariant 5: a rejected addSession leaves stats, listings and the store folder unchanged;
 * - forgotten data is gone from search, getRawNode, getBlob, entries and disk.
 * Shared by every backend: a `PropertyStore` says where a run's store lives and how to look under
 * it (SQLite: its files; Postgres: its rows, read as the superuser).
 */

/** A fresh store for one run, and what a backend can check beneath the SDK. */
export interface PropertyStore {
  /** A store folder or a `postgres://` URL. */
  readonly location: string;
  /** Everything under the store a rejected write must leave exactly as it was. */
  snapshot(): Promise<unknown>;
  /** The stored image bytes are exactly the images some raw node still references, each `tenant/hash` once. */
  checkBlobs(referenced: ReadonlySet<string>): Promise<void>;
  dispose(): Promise<void>;
}

/** A store folder: every file but the WAL index is the snapshot; blobs are files per tenant. */
export function sqlitePropertyStore(storeDir: string): PropertyStore {
  return {
    location: storeDir,
    async snapshot() {
      const files: Record<string, string> = {};
      if (!existsSync(storeDir)) return files;
      for (const entry of readdirSync(storeDir, { recursive: true, withFileTypes: true })) {
        if (!entry.isFile() || entry.name === "cairn.db-shm") continue;
        const path = join(entry.parentPath, entry.name);
        files[path.slice(storeDir.length + 1)] = sha256(readFileSync(path));
      }
      return files;
    },
    async checkBlobs(referenced) {
      // Each tenant owns its copy of an image: blobs/<tenant token>/<ab>/<hash>.
      const expected = new Set(
        [...referenced].map((key) => {
          const [tenant = "", hash = ""] = key.split("/");
          return join(tenantStorage(tenant).token, hash.slice(0, 2), hash);
        }),
      );
      const blobFiles = filesIn(join(storeDir, "blobs"));
      assert.deepEqual(new Set(blobFiles), expected, "blob files are exactly the referenced blobs");
      for (const path of blobFiles) {
        assert.equal(sha256(readFileSync(join(storeDir, "blobs", path))), basename(path));
      }
      assert.deepEqual(
        new Set(filesIn(join(storeDir, "thumbs"))),
        new Set([...expected].map((path) => `${path}.webp`)),
      );
      assert.deepEqual(filesIn(join(storeDir, "pending")), []);
    },
    async dispose() {},
  };
}

const scopes: readonly Scope[] = [
  { tenant: "t1", user: "ana" },
  { tenant: "t1", user: "ana", agent: "bot" },
  { tenant: "t2", user: "ana" },
];
const vocabulary = ["kayak", "lantern", "orchard", "violin", "glacier", "teapot"];
const speakers = ["Ana", "Bo"];

interface ModelNode {
  readonly id: string;
  readonly scope: number;
  readonly sessionId: string;
  readonly sessionKey: string;
  readonly turn: number;
  readonly speaker: string;
  readonly text: string;
  readonly marker: string;
  readonly images: readonly { hash: string; caption: string | null }[];
}

interface ModelSession {
  readonly id: string;
  readonly key: string;
  readonly input: unknown;
  nodes: ModelNode[];
}

interface Model {
  readonly sessions: Map<string, ModelSession>[];
  readonly forgotten: ModelNode[];
  readonly forgottenSessionIds: string[];
  readonly audits: number[];
  markers: number;
}

type TurnSpec = { words: number[]; speaker: number; image: number | null; caption: boolean };
type Op =
  | { kind: "add"; scope: number; key: number; turns: TurnSpec[] }
  | { kind: "readd"; scope: number; pick: number }
  | { kind: "bad"; scope: number; variant: "noTurns" | "corruptImage" | "badScope" | "conflict"; pick: number }
  | { kind: "forgetSession"; scope: number; pick: number; byKey: boolean }
  | { kind: "forgetRawNode"; scope: number; pick: number }
  | { kind: "forgetAll"; scope: number }
  | { kind: "forgetForeign"; scope: number; pick: number }
  | { kind: "search"; scope: number; pick: number };

const scopeIndex = fc.integer({ min: 0, max: scopes.length - 1 });
const pick = fc.nat({ max: 1_000 });
const turnSpec: fc.Arbitrary<TurnSpec> = fc.record({
  words: fc.array(fc.integer({ min: 0, max: vocabulary.length - 1 }), { maxLength: 3 }),
  speaker: fc.integer({ min: 0, max: speakers.length - 1 }),
  image: fc.option(fc.integer({ min: 0, max: 3 }), { freq: 2 }),
  caption: fc.boolean(),
});
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("add" as const),
      scope: scopeIndex,
      key: fc.integer({ min: 0, max: 3 }),
      turns: fc.array(turnSpec, { minLength: 1, maxLength: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("readd" as const), scope: scopeIndex, pick }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("bad" as const),
      scope: scopeIndex,
      variant: fc.constantFrom("noTurns" as const, "corruptImage" as const, "badScope" as const, "conflict" as const),
      pick,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("forgetSession" as const), scope: scopeIndex, pick, byKey: fc.boolean() }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("forgetRawNode" as const), scope: scopeIndex, pick }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("forgetAll" as const), scope: scopeIndex }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("forgetForeign" as const), scope: scopeIndex, pick }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("search" as const), scope: scopeIndex, pick }) },
);

const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");
const garbage = new Uint8Array(Array.from({ length: 300 }, (_, i) => (i * 7919) % 251));

/** Four images, drawn on the first run. */
let pool: Buffer[] = [];
const poolByHash = () => new Map(pool.map((image) => [sha256(image), image]));

async function rejectsWith(promise: Promise<unknown>, type: new (...args: never[]) => Error, what: string) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof type, `${what}: expected ${type.name}, got ${String(error)}`);
    return true;
  });
}

/** `list[index]`, which the caller knows exists. */
function at<T>(list: readonly T[], index: number): T {
  const value = list[index];
  assert.ok(value !== undefined, `no element ${index}`);
  return value;
}

const liveNodes = (model: Model, scope: number) => [...at(model.sessions, scope).values()].flatMap((s) => s.nodes);
const allLive = (model: Model) => scopes.flatMap((_, scope) => liveNodes(model, scope));
const choose = <T>(list: readonly T[], index: number): T | undefined =>
  list.length === 0 ? undefined : list[index % list.length];

/** Everything the SDK lets each scope list, plus the backend's snapshot (SQLite: every file except the WAL index, see bad-input.test.ts). */
async function observeAll(memory: Memory, store: PropertyStore) {
  const perScope = [];
  for (const scope of scopes) {
    const sessions = await memory.listSessions(scope);
    perScope.push({
      stats: await memory.stats(scope),
      sessions,
      nodes: await Promise.all(sessions.map((session) => memory.listRawNodes(scope, session.id))),
      entries: await memory.listEntries(scope),
      audit: await memory.listAudit(scope, { limit: 10_000 }),
    });
  }
  return { perScope, beneath: await store.snapshot() };
}

function filesIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1));
}

async function checkAll(memory: Memory, model: Model, store: PropertyStore): Promise<void> {
  const images = poolByHash();
  const forgottenMarkers = model.forgotten.map((node) => node.marker);
  const everyId = [...allLive(model), ...model.forgotten].map((node) => node.id);
  const referencedAnywhere = new Set(
    allLive(model).flatMap((node) => node.images.map((image) => `${at(scopes, node.scope).tenant}/${image.hash}`)),
  );

  for (const [index, scope] of scopes.entries()) {
    const sessions = at(model.sessions, index);
    const live = liveNodes(model, index);
    const hashes = new Set(live.flatMap((node) => node.images.map((image) => image.hash)));
    // Maintenance audits its own actions; the model counts the rest.
    const indexEvents = (await memory.listAudit(scope, { limit: 100_000 })).filter((event) =>
      event.action.startsWith("index."),
    ).length;
    const stats = await memory.stats(scope);
    assert.deepEqual(stats, {
      sessions: sessions.size,
      rawNodes: live.length,
      images: live.reduce((sum, node) => sum + node.images.length, 0),
      entries: stats.entries,
      auditEvents: at(model.audits, index) + indexEvents,
    });
    assert.equal(stats.entries > 0, live.length > 0, "the active index is empty exactly when the scope is");
    const listed = await memory.listSessions(scope);
    assert.deepEqual(
      new Set(listed.map((s) => `${s.key}=${s.id}`)),
      new Set([...sessions.values()].map((s) => `${s.key}=${s.id}`)),
    );

    // Invariant 1: what is still there is exactly what was added.
    for (const session of sessions.values()) {
      const nodes = await memory.listRawNodes(scope, session.id);
      assert.deepEqual(
        nodes.map((node) => node.id),
        session.nodes.map((node) => node.id),
      );
      for (const [position, node] of nodes.entries()) {
        const expected = at(session.nodes, position);
        assert.deepEqual(
          {
            sessionId: node.sessionId,
            sessionKey: node.sessionKey,
            turn: node.turn,
            speaker: node.speaker,
            text: node.text,
            images: node.images.map((image) => ({ hash: image.hash, caption: image.caption })),
          },
          {
            sessionId: expected.sessionId,
            sessionKey: expected.sessionKey,
            turn: expected.turn,
            speaker: expected.speaker,
            text: expected.text,
            images: expected.images,
          },
        );
      }
    }
    for (const hash of hashes) {
      const blob = await memory.getBlob(scope, hash);
      assert.equal(sha256(blob.data), hash, "blob bytes hash to their name");
      assert.deepEqual(Buffer.from(blob.data), images.get(hash));
    }

    // Entries point at every live raw node and at nothing else; the index keeps invariants 2 and 6.
    const entries = await memory.listEntries(scope);
    assert.deepEqual(
      new Set(entries.flatMap((entry) => entry.pointers)),
      new Set([...sessions.values()].flatMap((session) => session.nodes.map((node) => node.id))),
    );
    assert.deepEqual((await memory.checkIndex(scope)).violations, []);
    for (const entry of entries) {
      for (const marker of forgottenMarkers) {
        assert.ok(!entry.routingText.includes(marker), `entry ${entry.id} still quotes forgotten ${marker}`);
      }
    }
    const audit = JSON.stringify(await memory.listAudit(scope, { limit: 10_000 }));
    for (const node of [...allLive(model), ...model.forgotten]) {
      assert.ok(!audit.includes(node.marker), `the audit log holds raw text ${node.marker}`);
    }

    // Invariant 4 and forgetting: foreign and forgotten ids answer exactly like unknown ones.
    const visible = await memory[scopedStore](scope).readRawNodes({ ids: everyId });
    assert.deepEqual(new Set(visible.map((node) => node.id)), new Set(live.map((node) => node.id)));
    for (const node of [...allLive(model).filter((n) => n.scope !== index), ...model.forgotten]) {
      await rejectsWith(memory.getRawNode(scope, node.id), NotFoundError, "foreign or forgotten raw node");
    }
    for (const sessionId of [
      ...model.forgottenSessionIds,
      ...model.sessions.flatMap((other, o) => (o === index ? [] : [...other.values()].map((s) => s.id))),
    ]) {
      assert.deepEqual(await memory.listRawNodes(scope, sessionId), [], "foreign or forgotten session");
    }
    for (const hash of images.keys()) {
      if (hashes.has(hash)) continue;
      await rejectsWith(memory.getBlob(scope, hash), NotFoundError, "a blob this scope does not reference");
      await rejectsWith(memory.getBlob(scope, hash, { thumbnail: true }), NotFoundError, "its thumbnail");
    }
  }

  // Beneath the SDK: one copy per tenant of each blob still referenced, its bytes hashing to its name; nothing else.
  await store.checkBlobs(referencedAnywhere);
}

const sessionTime = (key: string) => `2024-05-0${1 + Number(key.slice(1))}T12:00:00Z`;

async function step(memory: Memory, model: Model, store: PropertyStore, operation: Op): Promise<void> {
  const scope = at(scopes, operation.scope);
  const sessions = at(model.sessions, operation.scope);
  const expectUnchanged = async (attempt: () => Promise<void>) => {
    const before = await observeAll(memory, store);
    await attempt();
    assert.deepEqual(await observeAll(memory, store), before, `${operation.kind} must change nothing`);
  };

  switch (operation.kind) {
    case "add": {
      const key = `k${operation.key}`;
      const markers: string[] = [];
      const input = {
        session: key,
        time: sessionTime(key),
        turns: operation.turns.map((turn) => {
          const marker = `mk${model.markers++}z`;
          markers.push(marker);
          return {
            speaker: at(speakers, turn.speaker),
            text: [...turn.words.map((word) => vocabulary[word]), marker].join(" "),
            ...(turn.image === null
              ? {}
              : { images: [{ data: at(pool, turn.image), ...(turn.caption ? { caption: `photo ${marker}` } : {}) }] }),
          };
        }),
      };
      if (sessions.has(key)) {
        // Same key, new content (fresh markers): a conflict that must change nothing.
        await expectUnchanged(() =>
          rejectsWith(memory.addSession(scope, input), ConflictError, "reused key with other content"),
        );
        return;
      }
      const result = await memory.addSession(scope, input);
      assert.equal(result.duplicate, false);
      assert.equal(result.rawNodeIds.length, input.turns.length);
      const session: ModelSession = { id: result.sessionId, key, input, nodes: [] };
      session.nodes = input.turns.map((turn, index) => ({
        id: at(result.rawNodeIds, index),
        scope: operation.scope,
        sessionId: result.sessionId,
        sessionKey: key,
        turn: index,
        speaker: turn.speaker,
        text: turn.text,
        marker: at(markers, index),
        images: (turn.images ?? []).map((image) => ({
          hash: sha256(image.data),
          caption: "caption" in image ? (image.caption as string) : null,
        })),
      }));
      sessions.set(key, session);
      model.audits[operation.scope] = at(model.audits, operation.scope) + 1;
      return;
    }
    case "readd": {
      const session = choose([...sessions.values()], operation.pick);
      if (!session) return;
      await expectUnchanged(async () => {
        const result = await memory.addSession(scope, session.input);
        assert.equal(result.duplicate, true);
        assert.equal(result.sessionId, session.id);
        assert.deepEqual(
          result.rawNodeIds,
          session.nodes.map((node) => node.id),
        );
      });
      return;
    }
    case "bad": {
      const valid = { speaker: "Ana", text: "a perfectly fine turn" };
      const existing = choose([...sessions.values()], operation.pick);
      await expectUnchanged(async () => {
        if (operation.variant === "conflict" && existing) {
          const input = { session: existing.key, time: sessionTime(existing.key), turns: [valid] };
          await rejectsWith(memory.addSession(scope, input), ConflictError, "conflict");
        } else if (operation.variant === "corruptImage") {
          const input = {
            session: "k9",
            time: sessionTime("k9"),
            turns: [
              { ...valid, images: [{ data: at(pool, 0) }] },
              { text: "broken", images: [{ data: garbage }] },
            ],
          };
          await rejectsWith(memory.addSession(scope, input), InputError, "corrupt image");
        } else if (operation.variant === "badScope") {
          const input = { session: "k9", time: sessionTime("k9"), turns: [valid] };
          await rejectsWith(memory.addSession({ ...scope, user: "ana/../bo" }, input), InputError, "bad scope");
        } else {
          const input = { session: "k9", time: sessionTime("k9"), turns: [] };
          await rejectsWith(memory.addSession(scope, input), InputError, "no turns");
        }
      });
      return;
    }
    case "forgetSession": {
      const session = choose([...sessions.values()], operation.pick);
      if (!session) {
        await expectUnchanged(() =>
          rejectsWith(memory.forget(scope, { session: "k0" }), NotFoundError, "forget a missing session"),
        );
        return;
      }
      const result = await memory.forget(scope, { session: operation.byKey ? session.key : session.id });
      assert.equal(result.sessions, 1);
      assert.equal(result.rawNodes, session.nodes.length);
      model.forgotten.push(...session.nodes);
      model.forgottenSessionIds.push(session.id);
      sessions.delete(session.key);
      model.audits[operation.scope] = at(model.audits, operation.scope) + 1;
      return;
    }
    case "forgetRawNode": {
      const node = choose(liveNodes(model, operation.scope), operation.pick);
      if (!node) return;
      const result = await memory.forget(scope, { rawNode: node.id });
      assert.equal(result.rawNodes, 1);
      const session = sessions.get(node.sessionKey);
      assert.ok(session);
      session.nodes = session.nodes.filter((other) => other.id !== node.id);
      model.forgotten.push(node);
      model.audits[operation.scope] = at(model.audits, operation.scope) + 1;
      return;
    }
    case "forgetAll": {
      const result = await memory.forget(scope, { all: true });
      assert.equal(result.sessions, sessions.size);
      assert.equal(result.rawNodes, liveNodes(model, operation.scope).length);
      model.forgotten.push(...liveNodes(model, operation.scope));
      model.forgottenSessionIds.push(...[...sessions.values()].map((session) => session.id));
      sessions.clear();
      // Only the forget event itself is left of a forgotten scope's audit log.
      model.audits[operation.scope] = 1;
      return;
    }
    case "forgetForeign": {
      const foreign = allLive(model).filter((node) => node.scope !== operation.scope);
      const node = choose(foreign, operation.pick);
      if (!node) return;
      await expectUnchanged(async () => {
        await rejectsWith(memory.forget(scope, { rawNode: node.id }), NotFoundError, "forget a foreign raw node");
        await rejectsWith(memory.forget(scope, { session: node.sessionId }), NotFoundError, "forget a foreign session");
      });
      return;
    }
    case "search": {
      const everyNode = [...allLive(model), ...model.forgotten];
      const target = choose(everyNode, operation.pick);
      const query = target ? target.marker : "kayak";
      const live = new Map(liveNodes(model, operation.scope).map((node) => [node.id, node]));
      const pack = await memory.search(scope, query);
      for (const item of pack.items) {
        const node = live.get(item.rawNodeId);
        assert.ok(node, `search in scope ${operation.scope} returned ${item.rawNodeId}, not a live raw node of it`);
        assert.equal(item.text, node.text);
        assert.equal(item.provenance.sessionKey, node.sessionKey);
      }
      const found = pack.items.some((item) => item.text.includes(query));
      const shouldFind = target !== undefined && live.has(target.id);
      if (target) assert.equal(found, shouldFind, `search for ${query}: found ${found}, expected ${shouldFind}`);
      return;
    }
  }
}

/**
 * Runs `numRuns` random sequences, each on a fresh store from `open`.
 */
export async function checkInvariantsProperty(options: {
  readonly numRuns: number;
  readonly open: () => Promise<PropertyStore>;
}): Promise<void> {
  if (pool.length === 0) {
    pool = await Promise.all([
      drawPng({ color: "#c22" }),
      drawPng({ color: "#22c", shape: "square" }),
      drawPng({ color: "#2a2", shape: "stripes" }),
      drawPng({ color: "#aa2", size: 64 }),
    ]);
  }
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 6, maxLength: 20 }), async (operations) => {
      const store = await options.open();
      const memory = await Memory.open({ path: store.location, models: createHashModels({ dimensions: 64 }) });
      const model: Model = {
        sessions: scopes.map(() => new Map()),
        forgotten: [],
        forgottenSessionIds: [],
        audits: scopes.map(() => 0),
        markers: 0,
      };
      try {
        for (const [index, operation] of operations.entries()) {
          try {
            await step(memory, model, store, operation);
            await checkAll(memory, model, store);
          } catch (error) {
            (error as Error).message = `after step ${index} ${JSON.stringify(operation)}: ${(error as Error).message}`;
            throw error;
          }
        }
      } finally {
        await memory.close();
        await store.dispose();
      }
    }),
    { numRuns: options.numRuns },
  );
}
