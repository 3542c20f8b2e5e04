import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it, type TestContext } from "node:test";
import sharp from "sharp";
import { ConflictError, NotFoundError } from "../../src/core/errors.ts";
import type { Scope } from "../../src/core/scope.ts";
import { unboundedPolicy } from "../../src/maintain/baselines.ts";
import { defaultIndexBounds } from "../../src/maintain/config.ts";
import { buildIncomingEntries } from "../../src/maintain/incoming.ts";
import { planMaintenance } from "../../src/maintain/ramu.ts";
import { hashImageEmbedder, hashTextEmbedder } from "../../src/models/hash-provider.ts";
import type { VectorSpaces } from "../../src/models/vector-spaces.ts";
import type { MaintenancePlan } from "../../src/store/index-records.ts";
import type {
  BlobWrite,
  RawNodeWrite,
  ScopeStats,
  SearchFilters,
  SessionWrite,
  VectorSpace,
} from "../../src/store/records.ts";
import type { ScopedStore, Store } from "../../src/store/store.ts";
import { drawPng } from "../support/fixtures.ts";
import { findSessionByKey, forget, getRawNode, getSession, getThumbnail, listEntries } from "./scoped-reads.ts";

/**
 * One conformance suite for the `Store` seam, written against `Store` / `ScopedStore` only, so
 * every backend (SQLite today, Postgres later) answers the same questions the same way.
 *
 * @example
 * runStoreConformance("sqlite", async (t) => SqliteStore.open({ path: tempDir(t) }), {
 *   skip: { "vector search ranks by similarity": "no vector extension on this server" },
 * });
 */
export interface StoreConformanceOptions {
  /** Case name → why this backend skips it. */
  readonly skip?: Readonly<Record<string, string>>;
  /** Case name → the known bug that makes it fail today (reported, not hidden). */
  readonly todo?: Readonly<Record<string, string>>;
}

/** The suite closes the store it is given; `makeStore` need only clean up its own folders. */
export type MakeStore = (t: TestContext) => Promise<Store>;

const scopeA: Scope = { tenant: "acme", user: "ana" };
/** Same tenant and user, another agent: a different scope. */
const scopeB: Scope = { tenant: "acme", user: "ana", agent: "helper" };
const scopeC: Scope = { tenant: "globex", user: "ana" };

const textSpace: VectorSpace = { name: "text:conformance-hash-64", kind: "text", dimensions: 64 };
const imageSpace: VectorSpace = { name: "image:conformance-hash-16", kind: "image", dimensions: 16 };
/** The spaces the conformance writes use, as a forget's re-derivation reads them. */
export const spaces: VectorSpaces = {
  text: textSpace,
  imageText: { name: "imagetext:conformance-hash-64", kind: "text", dimensions: 64 },
  image: imageSpace,
};
const textEmbedder = hashTextEmbedder(textSpace.dimensions);
const imageEmbedder = hashImageEmbedder(imageSpace.dimensions);

/** Audit action names are part of the contract: surfaces show them. */
const auditActions = { add: "session.add", forget: "forget" } as const;

const base = Date.parse("2024-05-08T10:00:00Z");
const hour = 3_600_000;

interface ImageSpec {
  readonly data: Uint8Array;
  readonly caption?: string | null;
  readonly derivedText?: string | null;
  readonly origin?: string | null;
}

interface TurnSpec {
  readonly speaker?: string | null;
  readonly role?: string | null;
  readonly text: string;
  readonly timeMs?: number;
  readonly uri?: string | null;
  readonly metadata?: Record<string, unknown>;
  readonly images?: readonly ImageSpec[];
}

interface SessionSpec {
  readonly key: string;
  readonly timeMs?: number;
  readonly source?: string | null;
  readonly turns: readonly TurnSpec[];
}

const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest("hex");

/** Builds a `SessionWrite` the way the SDK does: blobs with thumbnails, one vector per text and per image. */
export async function buildSessionWrite(spec: SessionSpec): Promise<SessionWrite> {
  const timeMs = spec.timeMs ?? base;
  const blobs = new Map<string, BlobWrite>();
  for (const image of spec.turns.flatMap((turn) => turn.images ?? [])) {
    const hash = sha256(image.data);
    if (blobs.has(hash)) continue;
    const metadata = await sharp(image.data).metadata();
    blobs.set(hash, {
      hash,
      mediaType: "image/png",
      bytes: image.data.length,
      width: metadata.width ?? 0,
      height: metadata.height ?? 0,
      data: image.data,
      thumbnail: await sharp(image.data).resize(32, 32, { fit: "inside" }).webp().toBuffer(),
    });
  }
  const rawNodes: RawNodeWrite[] = [];
  for (const [turn, turnSpec] of spec.turns.entries()) {
    const images = turnSpec.images ?? [];
    const textVectors = turnSpec.text.trim() ? { [textSpace.name]: await embedText(turnSpec.text) } : {};
    const imageVectors = await Promise.all(
      images.map(async (image) => ({ [imageSpace.name]: await embedImage(image.data) })),
    );
    rawNodes.push({
      turn,
      speaker: turnSpec.speaker ?? null,
      role: turnSpec.role ?? null,
      text: turnSpec.text,
      timeMs: turnSpec.timeMs ?? timeMs,
      source: spec.source ?? null,
      uri: turnSpec.uri ?? null,
      metadata: turnSpec.metadata ?? {},
      images: images.map((image) => ({
        hash: sha256(image.data),
        caption: image.caption ?? null,
        derivedText: image.derivedText ?? null,
        origin: image.origin ?? null,
      })),
      textVectors,
      imageVectors,
    });
  }
  const canonical = rawNodes.map(({ textVectors: _t, imageVectors: _i, ...node }) => node);
  return {
    key: spec.key,
    timeMs,
    source: spec.source ?? null,
    contentHash: sha256(JSON.stringify({ timeMs, source: spec.source ?? null, canonical })),
    blobs: [...blobs.values()],
    rawNodes,
    spaces: [textSpace, imageSpace],
    index: {
      plan: await addOnlyPlan(spec.key, rawNodes, timeMs),
      spaces: { text: textSpace.name, image: imageSpace.name },
    },
  };
}

/** One new entry over all the session's raw nodes: a plan that does not depend on the index's state. */
async function addOnlyPlan(key: string, rawNodes: readonly RawNodeWrite[], timeMs: number): Promise<MaintenancePlan> {
  const incoming = buildIncomingEntries(
    key,
    rawNodes.map((node, index) => ({
      ref: `@${index}`,
      speaker: node.speaker,
      text: node.text,
      imageText: [],
      timeMs: node.timeMs,
      vector: node.textVectors[textSpace.name] ?? null,
      imageVectors: [],
    })),
    { segmentMaxNodes: 1_000, dimensions: textSpace.dimensions },
  );
  let next = 0;
  const plan = await planMaintenance({ version: 0, entries: new Map() }, incoming, unboundedPolicy, {
    bounds: defaultIndexBounds,
    newId: () => `ent_${key}_${sha256(String(Math.random())).slice(0, 8)}_${next++}`,
    nowMs: timeMs,
  });
  return { ...plan, baseVersion: null };
}

async function embedText(text: string): Promise<Float32Array> {
  const [vector] = await textEmbedder.embed([text]);
  assert.ok(vector);
  return vector;
}

async function embedImage(data: Uint8Array): Promise<Float32Array> {
  const [vector] = await imageEmbedder.embedImages([data]);
  assert.ok(vector);
  return vector;
}

let imageCache: Promise<{ red: Buffer; blue: Buffer; green: Buffer; yellow: Buffer }> | undefined;
/** Four small, distinct real PNGs, drawn once per process. */
function images() {
  imageCache ??= (async () => ({
    red: await drawPng({ shape: "circle", color: "#d22", background: "#fff" }),
    blue: await drawPng({ shape: "square", color: "#22d", background: "#eee" }),
    green: await drawPng({ shape: "stripes", color: "#2a2", background: "#000" }),
    yellow: await drawPng({ shape: "circle", color: "#dd2", background: "#333", size: 64 }),
  }))();
  return imageCache;
}

async function expectNotFound(promise: Promise<unknown>, message: string): Promise<NotFoundError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof NotFoundError, `${message}: expected NotFoundError, got ${String(caught)}`);
  return caught;
}

async function expectConflict(promise: Promise<unknown>, message: string): Promise<void> {
  await assert.rejects(promise, (error) => error instanceof ConflictError, message);
}

const ids = (ranked: readonly { id: string }[]) => ranked.map((hit) => hit.id);

function assertDescending(scores: readonly { score: number }[], message: string): void {
  for (let i = 1; i < scores.length; i++) {
    assert.ok(
      (scores[i - 1]?.score ?? 0) >= (scores[i]?.score ?? 0),
      `${message}: scores must be best first, got ${scores.map((s) => s.score).join(", ")}`,
    );
  }
}

/** Everything a scope can list, to prove that an operation changed nothing. */
async function observe(scoped: ScopedStore) {
  const sessions = await scoped.readSessions({});
  const nodes = await Promise.all(sessions.map((session) => scoped.readRawNodes({ sessionId: session.id })));
  return {
    stats: await scoped.stats(),
    sessions,
    nodes,
    entries: await listEntries(scoped),
    audit: await scoped.readAudit({ limit: 1_000 }),
  };
}

export function runStoreConformance(name: string, makeStore: MakeStore, options: StoreConformanceOptions = {}): void {
  const cases: { name: string; run: (store: Store, t: TestContext) => Promise<void> }[] = [];
  const test = (caseName: string, run: (store: Store, t: TestContext) => Promise<void>) =>
    cases.push({ name: caseName, run });

  test("commit then read back session, raw nodes, images, entry and audit", async (store) => {
    const { red, blue } = await images();
    const a = store.forScope(scopeA);
    const write = await buildSessionWrite({
      key: "trip-1",
      timeMs: base,
      source: "chat-export",
      turns: [
        {
          speaker: "Ana",
          role: "user",
          text: "We rented a red kayak at the lake",
          uri: "msg://1",
          metadata: { mood: "happy", tags: ["lake"] },
          images: [
            { data: red, caption: "a red kayak", derivedText: "RENTAL 42", origin: "img/kayak.png" },
            { data: blue, caption: null, origin: null },
          ],
        },
        { speaker: "Bo", role: "assistant", text: "Sounds lovely, how cold was the water?", timeMs: base + hour },
      ],
    });
    const result = await a.commitSession(write);
    assert.equal(result.duplicate, false);
    assert.equal(result.rawNodeIds.length, 2);
    assert.equal(new Set(result.rawNodeIds).size, 2, "raw node ids are distinct");
    assert.equal(result.session.key, "trip-1");
    assert.equal(result.session.time, new Date(base).toISOString());
    assert.equal(result.session.source, "chat-export");
    assert.equal(result.session.turnCount, 2);
    assert.equal(result.session.imageCount, 2);
    assert.equal(result.session.contentHash, write.contentHash);

    assert.deepEqual(await getSession(a, result.session.id), result.session);
    assert.deepEqual(await findSessionByKey(a, "trip-1"), result.session);
    assert.equal(await findSessionByKey(a, "trip-2"), null);
    assert.deepEqual(await a.readSessions({}), [result.session]);

    const [firstId, secondId] = result.rawNodeIds as [string, string];
    const first = await getRawNode(a, firstId);
    assert.deepEqual(
      { ...first, images: undefined },
      {
        id: firstId,
        sessionId: result.session.id,
        sessionKey: "trip-1",
        turn: 0,
        speaker: "Ana",
        role: "user",
        text: "We rented a red kayak at the lake",
        time: new Date(base).toISOString(),
        source: "chat-export",
        uri: "msg://1",
        images: undefined,
        metadata: { mood: "happy", tags: ["lake"] },
      },
    );
    assert.deepEqual(first.images, [
      {
        ordinal: 0,
        hash: sha256(red),
        mediaType: "image/png",
        bytes: red.length,
        width: 96,
        height: 96,
        caption: "a red kayak",
        derivedText: "RENTAL 42",
        origin: "img/kayak.png",
      },
      {
        ordinal: 1,
        hash: sha256(blue),
        mediaType: "image/png",
        bytes: blue.length,
        width: 96,
        height: 96,
        caption: null,
        derivedText: null,
        origin: null,
      },
    ]);
    const second = await getRawNode(a, secondId);
    assert.equal(second.text, "Sounds lovely, how cold was the water?");
    assert.equal(second.time, new Date(base + hour).toISOString());
    assert.deepEqual(second.images, []);
    assert.deepEqual(second.metadata, {});

    assert.deepEqual(ids(await a.readRawNodes({ ids: [secondId, "rn_unknown", firstId] })), [secondId, firstId]);
    assert.deepEqual(ids(await a.readRawNodes({ sessionId: result.session.id })), [firstId, secondId]);

    const blob = await a.readBlob(sha256(red));
    assert.deepEqual(Buffer.from(blob.data), red);
    assert.deepEqual(blob.record, {
      hash: sha256(red),
      mediaType: "image/png",
      bytes: red.length,
      width: 96,
      height: 96,
    });
    const thumbnail = write.blobs.find((b) => b.hash === sha256(red))?.thumbnail;
    assert.deepEqual(Buffer.from(await getThumbnail(a, sha256(red))), Buffer.from(thumbnail ?? []));

    const entries = await listEntries(a);
    assert.equal(entries.length, 1);
    assert.deepEqual([entries[0]?.id], result.entryIds);
    assert.deepEqual(entries[0]?.sessions, [write.key]);
    assert.equal(entries[0]?.status, "active");
    assert.match(entries[0]?.routingText ?? "", /Ana/);
    assert.equal(entries[0]?.timeStart, new Date(base).toISOString());
    assert.equal(entries[0]?.timeEnd, new Date(base + hour).toISOString());
    assert.deepEqual(entries[0]?.pointers, result.rawNodeIds);

    const audit = await a.readAudit();
    assert.equal(audit.length, 2, "the session and the index action that placed it");
    assert.equal(audit[0]?.action, auditActions.add);
    assert.equal(audit[0]?.subject, result.session.id);
    assert.deepEqual(await a.stats(), { sessions: 1, rawNodes: 2, images: 2, entries: 1, auditEvents: 2 });
  });

  test("a duplicate commit (same key, same content hash) writes nothing and returns the stored session", async (store) => {
    const { red } = await images();
    const a = store.forScope(scopeA);
    const write = await buildSessionWrite({
      key: "s1",
      turns: [{ speaker: "Ana", text: "my bike is red", images: [{ data: red, caption: "bike" }] }],
    });
    const first = await a.commitSession(write);
    const before = await observe(a);
    const again = await a.commitSession(write);
    assert.equal(again.duplicate, true);
    assert.deepEqual(again.session, first.session);
    assert.deepEqual(again.rawNodeIds, first.rawNodeIds);
    assert.deepEqual(again.entryIds, [], "a duplicate changes no entry");
    assert.deepEqual(await observe(a), before, "a duplicate commit adds no rows and no audit event");
  });

  test("concurrent commits of one new key: same content is a duplicate, other content a conflict", async (store) => {
    const a = store.forScope(scopeA);
    const write = await buildSessionWrite({ key: "retry", turns: [{ text: "sent twice by a retrying client" }] });
    const results = await Promise.all([a.commitSession(write), a.commitSession(write)]);
    assert.deepEqual(results.map((result) => result.duplicate).sort(), [false, true]);
    assert.equal(results[0]?.session.id, results[1]?.session.id);
    assert.deepEqual(results[0]?.rawNodeIds, results[1]?.rawNodeIds);
    const other = await buildSessionWrite({ key: "race", turns: [{ text: "version one" }] });
    const rival = await buildSessionWrite({ key: "race", turns: [{ text: "version two" }] });
    const settled = await Promise.allSettled([a.commitSession(other), a.commitSession(rival)]);
    assert.equal(settled[0]?.status, "fulfilled");
    assert.ok(
      settled[1]?.status === "rejected" && settled[1].reason instanceof ConflictError,
      `the second writer of a key gets ConflictError, got ${settled[1]?.status === "rejected" ? settled[1].reason : "success"}`,
    );
    assert.equal((await a.stats()).sessions, 2);
  });

  test("a conflicting commit (same key, other content) throws ConflictError and writes nothing", async (store) => {
    const { red, blue } = await images();
    const a = store.forScope(scopeA);
    await a.commitSession(
      await buildSessionWrite({ key: "s1", turns: [{ text: "the first version", images: [{ data: red }] }] }),
    );
    const before = await observe(a);
    const other = await buildSessionWrite({
      key: "s1",
      turns: [{ text: "a contradicting zeppelin" }, { text: "with a new image", images: [{ data: blue }] }],
    });
    await expectConflict(a.commitSession(other), "same key, different content");
    assert.deepEqual(await observe(a), before);
    await expectNotFound(a.readBlob(sha256(blue)), "the conflicting write's new image was not stored");
    assert.deepEqual(await a.searchLexical("text", "zeppelin", { limit: 10 }), []);
  });

  test("a commit that fails inside the backend writes nothing and the key stays free", async (store) => {
    const { red, green } = await images();
    const a = store.forScope(scopeA);
    await a.commitSession(await buildSessionWrite({ key: "ok", turns: [{ text: "kept", images: [{ data: red }] }] }));
    const before = await observe(a);
    const good = await buildSessionWrite({
      key: "broken",
      turns: [{ text: "first turn is fine", images: [{ data: green }] }, { text: "second turn is broken" }],
    });
    const [node0, node1] = good.rawNodes as [RawNodeWrite, RawNodeWrite];
    const broken: SessionWrite = {
      ...good,
      // The last raw node's vector has the wrong length for its declared space.
      rawNodes: [node0, { ...node1, textVectors: { [textSpace.name]: new Float32Array(textSpace.dimensions + 3) } }],
    };
    await assert.rejects(a.commitSession(broken));
    assert.deepEqual(await observe(a), before);
    assert.equal(await findSessionByKey(a, "broken"), null);
    await expectNotFound(a.readBlob(sha256(green)), "a blob of a failed commit is not readable");
    assert.deepEqual(await a.searchLexical("text", "first turn fine", { limit: 10 }), []);
    const retried = await a.commitSession(good);
    assert.equal(retried.duplicate, false, "the key is free after the failed commit");
    assert.deepEqual(Buffer.from((await a.readBlob(sha256(green))).data), green);
  });

  test("lexical search ranks by BM25, best first, within the limit", async (store) => {
    const { red } = await images();
    const a = store.forScope(scopeA);
    const result = await a.commitSession(
      await buildSessionWrite({
        key: "s1",
        turns: [
          { text: "giraffe giraffe giraffe at the zoo with a giraffe keeper" },
          { text: "one giraffe, many zebras, zebras everywhere" },
          { text: "we had soup for lunch" },
          {
            text: "nothing to see",
            images: [{ data: red, caption: "a sunset over the harbour", derivedText: "PIER 7" }],
          },
        ],
      }),
    );
    const [most, fewer, unrelated, pictured] = result.rawNodeIds as [string, string, string, string];
    const hits = await a.searchLexical("text", "Giraffe", { limit: 10 });
    assert.deepEqual(ids(hits), [most, fewer]);
    assertDescending(hits, "lexical");
    assert.equal((await a.searchLexical("text", "giraffe zebras", { limit: 1 })).length, 1, "the limit holds");
    assert.ok(!ids(await a.searchLexical("text", "giraffe zebras", { limit: 10 })).includes(unrelated));
    assert.deepEqual(ids(await a.searchLexical("text", "soup", { limit: 10 })), [unrelated]);
    // Image-derived text is its own field: captions and OCR are found there, not in the turn text.
    assert.deepEqual(ids(await a.searchLexical("imageText", "harbour sunset", { limit: 10 })), [pictured]);
    assert.deepEqual(ids(await a.searchLexical("imageText", "pier", { limit: 10 })), [pictured]);
    assert.deepEqual(await a.searchLexical("text", "harbour", { limit: 10 }), []);
    assert.deepEqual(await a.searchLexical("imageText", "giraffe", { limit: 10 }), []);
    // User text is never parsed as query syntax.
    assert.deepEqual(ids(await a.searchLexical("text", 'giraffe" OR * NEAR(', { limit: 10 })), [most, fewer]);
    assert.deepEqual(await a.searchLexical("text", "   ", { limit: 10 }), []);
  });

  test("lexical search respects session, time and speaker filters", async (store) => {
    const a = store.forScope(scopeA);
    const { ana1, bo1, ana2, ana3 } = await filterFixture(a);
    const search = (filters: SearchFilters) =>
      a.searchLexical("text", "marmalade", { limit: 10, filters }).then((hits) => new Set(ids(hits)));
    assert.deepEqual(await search({}), new Set([ana1, bo1, ana2, ana3]));
    assert.deepEqual(await search({ sessionKeys: ["day-1"] }), new Set([ana1, bo1]));
    assert.deepEqual(await search({ sessionKeys: ["day-2", "day-3"] }), new Set([ana2, ana3]));
    assert.deepEqual(await search({ sessionKeys: ["no-such-session"] }), new Set());
    assert.deepEqual(await search({ speakers: ["Bo"] }), new Set([bo1]));
    assert.deepEqual(await search({ timeFromMs: base + 24 * hour }), new Set([ana2, ana3]));
    assert.deepEqual(await search({ timeToMs: base + 24 * hour }), new Set([ana1, bo1, ana2]), "bounds are inclusive");
    assert.deepEqual(
      await search({ timeFromMs: base + 24 * hour, timeToMs: base + 24 * hour, speakers: ["Ana"] }),
      new Set([ana2]),
    );
    assert.deepEqual(await search({ sessionKeys: ["day-1"], speakers: ["Ana"] }), new Set([ana1]));
  });

  test("vector search ranks by cosine similarity, best first, within the limit", async (store) => {
    const a = store.forScope(scopeA);
    const texts = [
      "the lighthouse keeper painted the door blue",
      "a recipe for lemon drizzle cake",
      "lighthouse tours start at noon",
      "quarterly tax forms are due",
    ];
    const result = await a.commitSession(
      await buildSessionWrite({ key: "s1", turns: texts.map((text) => ({ text })) }),
    );
    const [keeper, cake] = result.rawNodeIds as [string, string];
    const exact = await a.searchVectors(textSpace.name, await embedText(texts[0] as string), { limit: 10 });
    assert.equal(exact.length, 4);
    assert.equal(exact[0]?.id, keeper, "the identical text is nearest");
    assert.ok(Math.abs((exact[0]?.score ?? 0) - 1) < 1e-4, `identical vector scores ~1, got ${exact[0]?.score}`);
    assertDescending(exact, "vector");
    assert.deepEqual(new Set(ids(exact)), new Set(result.rawNodeIds));
    const top2 = await a.searchVectors(textSpace.name, await embedText("lemon drizzle cake recipe"), { limit: 2 });
    assert.equal(top2.length, 2);
    assert.equal(top2[0]?.id, cake);
  });

  test("vector search respects session, time and speaker filters", async (store) => {
    const a = store.forScope(scopeA);
    const { ana1, bo1, ana2, ana3 } = await filterFixture(a);
    const query = await embedText("marmalade on toast");
    const search = (filters: SearchFilters) =>
      a.searchVectors(textSpace.name, query, { limit: 10, filters }).then((hits) => new Set(ids(hits)));
    assert.deepEqual(await search({}), new Set([ana1, bo1, ana2, ana3]));
    assert.deepEqual(await search({ sessionKeys: ["day-1"] }), new Set([ana1, bo1]));
    assert.deepEqual(await search({ sessionKeys: ["day-2", "day-3"] }), new Set([ana2, ana3]));
    assert.deepEqual(await search({ sessionKeys: ["no-such-session"] }), new Set());
    assert.deepEqual(await search({ speakers: ["Bo"] }), new Set([bo1]));
    assert.deepEqual(await search({ speakers: ["Ana", "Bo"] }), new Set([ana1, bo1, ana2, ana3]));
    assert.deepEqual(await search({ timeFromMs: base + 24 * hour }), new Set([ana2, ana3]));
    assert.deepEqual(await search({ timeToMs: base + 24 * hour }), new Set([ana1, bo1, ana2]), "bounds are inclusive");
    assert.deepEqual(
      await search({ timeFromMs: base + 24 * hour, timeToMs: base + 24 * hour, speakers: ["Ana"] }),
      new Set([ana2]),
    );
    // A filter narrows before ranking: the limit counts matching rows, not rows overall.
    const limited = await a.searchVectors(textSpace.name, query, { limit: 1, filters: { speakers: ["Bo"] } });
    assert.deepEqual(ids(limited), [bo1]);
  });

  test("image vectors map back to raw nodes, each raw node once", async (store) => {
    const { red, blue, green, yellow } = await images();
    const a = store.forScope(scopeA);
    const result = await a.commitSession(
      await buildSessionWrite({
        key: "album",
        turns: [
          { text: "two photos", images: [{ data: red }, { data: blue }] },
          { text: "one photo", images: [{ data: green }] },
          { text: "no photo here" },
          { text: "the blue one again", images: [{ data: blue }] },
        ],
      }),
    );
    const [pair, single, , again] = result.rawNodeIds as [string, string, string, string];
    const byBlue = await a.searchVectors(imageSpace.name, await embedImage(blue), { limit: 10 });
    assert.deepEqual(new Set(ids(byBlue)), new Set([pair, single, again]), "only raw nodes with images, by id");
    assert.equal(new Set(ids(byBlue)).size, byBlue.length, "a raw node with two images appears once");
    assert.ok(
      ids(byBlue).indexOf(single) === 2,
      `both raw nodes holding the blue image rank above the green one: ${ids(byBlue)}`,
    );
    assert.ok(Math.abs((byBlue[0]?.score ?? 0) - 1) < 1e-4);
    const byGreen = await a.searchVectors(imageSpace.name, await embedImage(green), { limit: 1 });
    assert.deepEqual(ids(byGreen), [single]);
    // An image only another scope holds finds nothing here.
    const b = store.forScope(scopeB);
    await b.commitSession(await buildSessionWrite({ key: "b", turns: [{ text: "b", images: [{ data: yellow }] }] }));
    const byYellow = await a.searchVectors(imageSpace.name, await embedImage(yellow), { limit: 10 });
    assert.ok(ids(byYellow).every((id) => result.rawNodeIds.includes(id)));
  });

  test("getBlob and getThumbnail return stored bytes; unknown hashes are NotFoundError", async (store) => {
    const { red, green } = await images();
    const a = store.forScope(scopeA);
    const write = await buildSessionWrite({ key: "s", turns: [{ text: "pic", images: [{ data: red }] }] });
    await a.commitSession(write);
    const blob = await a.readBlob(sha256(red));
    assert.equal(sha256(blob.data), sha256(red), "bytes hash to their name");
    assert.deepEqual(
      Buffer.from(await getThumbnail(a, sha256(red))),
      Buffer.from(write.blobs[0]?.thumbnail ?? new Uint8Array()),
    );
    await expectNotFound(a.readBlob(sha256(green)), "a hash never stored");
    await expectNotFound(getThumbnail(a, sha256(green)), "a thumbnail never stored");
    await expectNotFound(a.readBlob("../../cairn.db"), "a path is not a hash");
    await expectNotFound(a.readBlob(""), "empty hash");
  });

  test("forget session cascades to raw nodes, search, vectors, entries and unshared blobs, audited without raw text", async (store) => {
    const { red, blue, green } = await images();
    const a = store.forScope(scopeA);
    const c = store.forScope(scopeC);
    const gone = await a.commitSession(
      await buildSessionWrite({
        key: "gone",
        turns: [
          { speaker: "Ana", text: "my secret pangolin diary", images: [{ data: red, caption: "pangolin sketch" }] },
          { speaker: "Ana", text: "the pangolin ate ants", images: [{ data: blue, derivedText: "ANTHILL" }] },
          { speaker: "Ana", text: "green stripes shared", images: [{ data: green }] },
        ],
      }),
    );
    const kept = await a.commitSession(
      await buildSessionWrite({ key: "kept", turns: [{ text: "a pangolin documentary", images: [{ data: blue }] }] }),
    );
    const other = await c.commitSession(
      await buildSessionWrite({ key: "gone", turns: [{ text: "other scope stripes", images: [{ data: green }] }] }),
    );
    const otherBefore = await observe(c);

    const result = await forget(a, { session: gone.session.id }, spaces);
    assert.equal(result.sessions, 1);
    assert.equal(result.rawNodes, 3);
    assert.equal(result.entries, 1);
    assert.equal(result.blobsDeleted, 1, "only the red image was referenced by nothing else");

    await expectNotFound(getSession(a, gone.session.id), "forgotten session");
    assert.equal(await findSessionByKey(a, "gone"), null);
    for (const id of gone.rawNodeIds) await expectNotFound(getRawNode(a, id), "forgotten raw node");
    assert.deepEqual(await a.readRawNodes({ ids: gone.rawNodeIds }), []);
    assert.deepEqual(await a.readRawNodes({ sessionId: gone.session.id }), []);
    assert.deepEqual(ids(await a.searchLexical("text", "pangolin", { limit: 10 })), kept.rawNodeIds);
    assert.deepEqual(await a.searchLexical("text", "secret diary ants", { limit: 10 }), []);
    assert.deepEqual(await a.searchLexical("imageText", "pangolin sketch anthill", { limit: 10 }), []);
    // Asking for as many hits as remain must return all of them: leftover vectors would take their places.
    const nearest = await a.searchVectors(textSpace.name, await embedText("my secret pangolin diary"), { limit: 1 });
    assert.deepEqual(ids(nearest), kept.rawNodeIds);
    const nearestImage = await a.searchVectors(imageSpace.name, await embedImage(green), { limit: 1 });
    assert.deepEqual(ids(nearestImage), kept.rawNodeIds);
    assert.deepEqual(
      (await listEntries(a)).map((entry) => entry.sessions),
      [[kept.session.key]],
    );

    await expectNotFound(a.readBlob(sha256(red)), "an unshared blob is deleted");
    await expectNotFound(getThumbnail(a, sha256(red)), "its thumbnail too");
    assert.deepEqual(Buffer.from((await a.readBlob(sha256(blue))).data), blue, "blue is still used in this scope");
    await expectNotFound(a.readBlob(sha256(green)), "green is no longer referenced in this scope");
    assert.deepEqual(Buffer.from((await c.readBlob(sha256(green))).data), green, "green is still used by scope C");
    assert.ok((await getThumbnail(c, sha256(green))).length > 0);
    assert.deepEqual(await observe(c), otherBefore, "another scope's same-named session is untouched");
    assert.equal((await getRawNode(c, other.rawNodeIds[0] as string)).text, "other scope stripes");

    const audit = await a.readAudit();
    const event = audit.find((e) => e.id === result.auditId);
    assert.ok(event, "forget is audited");
    assert.equal(event.action, auditActions.forget);
    assertNoRawText(audit, ["secret", "pangolin", "diary", "ants", "sketch", "ANTHILL", "stripes"]);

    const again = await a.commitSession(
      await buildSessionWrite({ key: "gone", turns: [{ text: "a fresh start", images: [{ data: red }] }] }),
    );
    assert.equal(again.duplicate, false, "a forgotten key can be used again");
    assert.deepEqual(Buffer.from((await a.readBlob(sha256(red))).data), red, "the same image can be stored again");
  });

  test("forget raw node removes it, rebuilds its entry without it, keeps its siblings", async (store) => {
    const { red, blue } = await images();
    const a = store.forScope(scopeA);
    const session = await a.commitSession(
      await buildSessionWrite({
        key: "s",
        turns: [
          { speaker: "Ana", text: "breakfast was porridge", timeMs: base },
          { speaker: "Ana", text: "lunch was a quokka sandwich", timeMs: base + hour, images: [{ data: red }] },
          { speaker: "Bo", text: "dinner was noodles", timeMs: base + 2 * hour, images: [{ data: blue }] },
        ],
      }),
    );
    const [breakfast, lunch, dinner] = session.rawNodeIds as [string, string, string];
    const result = await forget(a, { rawNode: lunch }, spaces);
    assert.deepEqual(
      { sessions: result.sessions, rawNodes: result.rawNodes, entries: result.entries, blobs: result.blobsDeleted },
      { sessions: 0, rawNodes: 1, entries: 0, blobs: 1 },
    );
    await expectNotFound(getRawNode(a, lunch), "forgotten raw node");
    assert.deepEqual(ids(await a.readRawNodes({ sessionId: session.session.id })), [breakfast, dinner]);
    assert.equal((await getRawNode(a, dinner)).text, "dinner was noodles", "siblings are untouched");
    assert.deepEqual(await a.searchLexical("text", "quokka sandwich", { limit: 10 }), []);
    assert.equal((await a.searchVectors(textSpace.name, await embedText("lunch"), { limit: 2 })).length, 2);
    await expectNotFound(a.readBlob(sha256(red)), "the forgotten turn's image");

    const [entry] = await listEntries(a);
    assert.ok(entry);
    assert.deepEqual(entry.pointers, [breakfast, dinner], "the entry points only at what remains");
    assert.ok(!entry.routingText.includes("quokka"), `entry text still quotes forgotten text: ${entry.routingText}`);
    assertNoRawText(await a.readAudit(), ["quokka", "sandwich"]);

    await forget(a, { rawNode: dinner }, spaces);
    const [afterDinner] = await listEntries(a);
    assert.equal(afterDinner?.timeEnd, new Date(base).toISOString(), "the entry's time span shrinks to what remains");
    const last = await forget(a, { rawNode: breakfast }, spaces);
    assert.equal(last.entries, 1, "an entry without pointers is removed");
    assert.deepEqual(await listEntries(a), []);
    assert.deepEqual(await a.stats(), { sessions: 1, rawNodes: 0, images: 0, entries: 0, auditEvents: 5 });
  });

  test("forget all empties the scope and leaves other scopes and shared blobs alone", async (store) => {
    const { red, blue } = await images();
    const a = store.forScope(scopeA);
    const b = store.forScope(scopeB);
    await a.commitSession(
      await buildSessionWrite({ key: "1", turns: [{ text: "alpha wombat", images: [{ data: red }] }] }),
    );
    await a.commitSession(
      await buildSessionWrite({ key: "2", turns: [{ text: "beta wombat", images: [{ data: blue }] }] }),
    );
    const bSession = await b.commitSession(
      await buildSessionWrite({ key: "1", turns: [{ text: "gamma wombat", images: [{ data: blue }] }] }),
    );
    const bBefore = await observe(b);
    const result = await forget(a, { all: true }, spaces);
    assert.deepEqual(
      { sessions: result.sessions, rawNodes: result.rawNodes, entries: result.entries, blobs: result.blobsDeleted },
      { sessions: 2, rawNodes: 2, entries: 2, blobs: 1 },
    );
    // A forgotten scope keeps one audit event, the forget with its counts (issue 18): the earlier
    // ones named its session keys and ids.
    assert.deepEqual(await a.stats(), { sessions: 0, rawNodes: 0, images: 0, entries: 0, auditEvents: 1 });
    assert.deepEqual(await a.readSessions({}), []);
    assert.deepEqual(await listEntries(a), []);
    assert.deepEqual(await a.searchLexical("text", "wombat", { limit: 10 }), []);
    assert.deepEqual(await a.searchVectors(textSpace.name, await embedText("wombat"), { limit: 10 }), []);
    assert.deepEqual(await a.searchVectors(imageSpace.name, await embedImage(blue), { limit: 10 }), []);
    await expectNotFound(a.readBlob(sha256(red)), "red");
    await expectNotFound(a.readBlob(sha256(blue)), "blue, in the forgetting scope");
    assert.deepEqual(await observe(b), bBefore);
    assert.deepEqual(Buffer.from((await b.readBlob(sha256(blue))).data), blue);
    assert.deepEqual(ids(await b.searchLexical("text", "wombat", { limit: 10 })), bSession.rawNodeIds);
    const [event] = await a.readAudit({ limit: 1 });
    assert.equal(event?.id, result.auditId);
    assert.equal(event?.action, auditActions.forget);
    assertNoRawText(await a.readAudit(), ["alpha", "beta", "wombat"]);
    const empty = await forget(a, { all: true }, spaces);
    assert.equal(empty.rawNodes, 0, "forgetting an empty scope is allowed");
  });

  test("forgetting unknown ids throws NotFoundError and removes nothing", async (store) => {
    const a = store.forScope(scopeA);
    await a.commitSession(await buildSessionWrite({ key: "s", turns: [{ text: "stays" }] }));
    const before = await observe(a);
    await expectNotFound(forget(a, { session: "ses_nope" }, spaces), "unknown session");
    await expectNotFound(forget(a, { rawNode: "rn_nope" }, spaces), "unknown raw node");
    assert.deepEqual(await observe(a), before);
  });

  test("a scope sees nothing of another scope, even by guessed ids and hashes", async (store) => {
    const { red, blue, green } = await images();
    const a = store.forScope(scopeA);
    const b = store.forScope(scopeB);
    const mine = await a.commitSession(
      await buildSessionWrite({
        key: "shared-key",
        turns: [{ speaker: "Ana", text: "my own okapi notes", images: [{ data: red }] }],
      }),
    );
    const theirs = await b.commitSession(
      await buildSessionWrite({
        key: "shared-key",
        turns: [
          { speaker: "Ana", text: "their private okapi narwhal plans", images: [{ data: blue, caption: "narwhal" }] },
          { speaker: "Bo", text: "more narwhal", images: [{ data: green }] },
        ],
      }),
    );
    assert.equal(theirs.duplicate, false, "the same key in another scope is not a duplicate");
    const bSessionOnly = await b.commitSession(await buildSessionWrite({ key: "b-only", turns: [{ text: "x" }] }));
    const theirIds = [...theirs.rawNodeIds, ...bSessionOnly.rawNodeIds];
    const before = await observe(a);

    const unknownSession = await expectNotFound(getSession(a, "ses_unknown"), "unknown session");
    const foreignSession = await expectNotFound(getSession(a, theirs.session.id), "foreign session");
    assert.equal(foreignSession.kind, unknownSession.kind, "foreign ids answer exactly like unknown ones");
    assert.equal(await findSessionByKey(a, "b-only"), null);
    assert.equal((await findSessionByKey(a, "shared-key"))?.id, mine.session.id);
    assert.deepEqual(
      (await a.readSessions({})).map((s) => s.id),
      [mine.session.id],
    );
    for (const id of theirIds) {
      const foreign = await expectNotFound(getRawNode(a, id), "foreign raw node");
      const unknown = await expectNotFound(getRawNode(a, `${id}x`), "unknown raw node");
      assert.equal(foreign.kind, unknown.kind);
      assert.equal(foreign.message.replace(id, "?"), unknown.message.replace(`${id}x`, "?"));
    }
    assert.deepEqual(ids(await a.readRawNodes({ ids: [...theirIds, ...mine.rawNodeIds] })), mine.rawNodeIds);
    assert.deepEqual(await a.readRawNodes({ sessionId: theirs.session.id }), []);
    for (const hash of [sha256(blue), sha256(green)]) {
      const foreign = await expectNotFound(a.readBlob(hash), "foreign blob");
      const unknown = await expectNotFound(a.readBlob(sha256(`${hash}x`)), "unknown blob");
      assert.equal(foreign.kind, unknown.kind);
      await expectNotFound(getThumbnail(a, hash), "foreign thumbnail");
    }
    assert.deepEqual(await a.searchLexical("text", "narwhal private plans", { limit: 10 }), []);
    assert.deepEqual(ids(await a.searchLexical("text", "okapi", { limit: 10 })), mine.rawNodeIds);
    assert.deepEqual(await a.searchLexical("imageText", "narwhal", { limit: 10 }), []);
    assert.deepEqual(await a.searchLexical("text", "narwhal", { limit: 10, filters: { speakers: ["Bo"] } }), []);
    const vectorHits = await a.searchVectors(textSpace.name, await embedText("their private okapi narwhal plans"), {
      limit: 10,
      filters: { sessionKeys: ["shared-key", "b-only"] },
    });
    assert.deepEqual(ids(vectorHits), mine.rawNodeIds);
    assert.deepEqual(
      ids(await a.searchVectors(imageSpace.name, await embedImage(blue), { limit: 10 })),
      mine.rawNodeIds,
    );
    assert.deepEqual(
      (await listEntries(a)).map((entry) => entry.sessions),
      [[mine.session.key]],
    );
    assert.ok((await a.readAudit()).every((event) => !theirIds.includes(event.subject)));
    assert.ok(
      (await a.readAudit()).every((event) => event.subject !== theirs.session.id),
      "audit events stay in their scope",
    );
    assert.deepEqual(await a.stats(), { sessions: 1, rawNodes: 1, images: 1, entries: 1, auditEvents: 2 });
    await expectNotFound(forget(a, { session: theirs.session.id }, spaces), "forget a foreign session");
    await expectNotFound(forget(a, { rawNode: theirIds[0] as string }, spaces), "forget a foreign raw node");
    assert.deepEqual(await observe(a), before, "reads and refused forgets changed nothing");

    const bBefore = await observe(b);
    await forget(a, { all: true }, spaces);
    assert.deepEqual(await observe(b), bBefore, "forget all in A leaves B as it was");
    assert.deepEqual(Buffer.from((await b.readBlob(sha256(blue))).data), blue);
  });

  test("stats count sessions, raw nodes, images, entries and audit events of the scope", async (store) => {
    const { red, blue } = await images();
    const a = store.forScope(scopeA);
    const c = store.forScope(scopeC);
    const empty: ScopeStats = { sessions: 0, rawNodes: 0, images: 0, entries: 0, auditEvents: 0 };
    assert.deepEqual(await a.stats(), empty);
    const first = await a.commitSession(
      await buildSessionWrite({
        key: "1",
        turns: [
          { text: "one", images: [{ data: red }, { data: red }] },
          { text: "two", images: [{ data: blue }] },
        ],
      }),
    );
    await a.commitSession(await buildSessionWrite({ key: "2", turns: [{ text: "three" }] }));
    await c.commitSession(
      await buildSessionWrite({ key: "1", turns: [{ text: "elsewhere", images: [{ data: red }] }] }),
    );
    assert.deepEqual(await a.stats(), { sessions: 2, rawNodes: 3, images: 3, entries: 2, auditEvents: 4 });
    assert.deepEqual(await c.stats(), { sessions: 1, rawNodes: 1, images: 1, entries: 1, auditEvents: 2 });
    await forget(a, { rawNode: first.rawNodeIds[0] as string }, spaces);
    assert.deepEqual(await a.stats(), { sessions: 2, rawNodes: 2, images: 1, entries: 2, auditEvents: 5 });
    assert.deepEqual(await store.forScope(scopeB).stats(), empty);
  });

  const known = new Set(cases.map((c) => c.name));
  for (const key of [...Object.keys(options.skip ?? {}), ...Object.keys(options.todo ?? {})]) {
    if (!known.has(key)) throw new Error(`store conformance: no case named "${key}" to skip or mark todo`);
  }

  describe(`Store conformance: ${name}`, () => {
    for (const testCase of cases) {
      const skip = options.skip?.[testCase.name];
      const todo = options.todo?.[testCase.name];
      it(testCase.name, { ...(skip ? { skip } : {}), ...(todo ? { todo } : {}) }, async (t) => {
        const store = await makeStore(t);
        try {
          await testCase.run(store, t);
        } finally {
          await store.close();
        }
      });
    }
  });
}

/** Four raw nodes over three sessions, two speakers and two days, all mentioning marmalade. */
async function filterFixture(a: ScopedStore) {
  const day1 = await a.commitSession(
    await buildSessionWrite({
      key: "day-1",
      timeMs: base,
      turns: [
        { speaker: "Ana", text: "marmalade on toast", timeMs: base },
        { speaker: "Bo", text: "I prefer marmalade on scones", timeMs: base + hour },
      ],
    }),
  );
  const day2 = await a.commitSession(
    await buildSessionWrite({
      key: "day-2",
      timeMs: base + 24 * hour,
      turns: [{ speaker: "Ana", text: "bought more marmalade" }],
    }),
  );
  const day3 = await a.commitSession(
    await buildSessionWrite({
      key: "day-3",
      timeMs: base + 48 * hour,
      turns: [{ speaker: "Ana", text: "marmalade is finished" }],
    }),
  );
  const [ana1, bo1] = day1.rawNodeIds as [string, string];
  return { ana1, bo1, ana2: day2.rawNodeIds[0] as string, ana3: day3.rawNodeIds[0] as string };
}

function assertNoRawText(audit: readonly unknown[], words: readonly string[]): void {
  const serialised = JSON.stringify(audit).toLowerCase();
  for (const word of words) {
    assert.ok(!serialised.includes(word.toLowerCase()), `audit log holds raw text "${word}": ${serialised}`);
  }
}
