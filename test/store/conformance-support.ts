import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { TestContext } from "node:test";
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
import type { BlobWrite, RawNodeWrite, SessionWrite, VectorSpace } from "../../src/store/records.ts";
import type { ScopedStore, Store } from "../../src/store/store.ts";
import { drawPng } from "../support/fixtures.ts";
import { listEntries } from "./scoped-reads.ts";

/**
 * What the three conformance files of the `Store` seam share: the options and the case registry
 * (./store-conformance.ts runs them), and the fixtures: scopes, vector spaces, session writes built
 * the way the SDK builds them, real images, and the expectations every group makes.
 */

export interface StoreConformanceOptions {
  /** Case name → why this backend skips it. */
  readonly skip?: Readonly<Record<string, string>>;
  /** Case name → the known bug that makes it fail today (reported, not hidden). */
  readonly todo?: Readonly<Record<string, string>>;
}

/** The suite closes the store it is given; `makeStore` need only clean up its own folders. */
export type MakeStore = (t: TestContext) => Promise<Store>;

export const scopeA: Scope = { tenant: "acme", user: "ana" };
/** Same tenant and user, another agent: a different scope. */
export const scopeB: Scope = { tenant: "acme", user: "ana", agent: "helper" };
export const scopeC: Scope = { tenant: "globex", user: "ana" };

export const textSpace: VectorSpace = { name: "text:conformance-hash-64", kind: "text", dimensions: 64 };
export const imageSpace: VectorSpace = { name: "image:conformance-hash-16", kind: "image", dimensions: 16 };
/** The spaces the conformance writes use, as a forget's re-derivation reads them. */
export const spaces: VectorSpaces = {
  text: textSpace,
  imageText: { name: "imagetext:conformance-hash-64", kind: "text", dimensions: 64 },
  image: imageSpace,
};
export const textEmbedder = hashTextEmbedder(textSpace.dimensions);
export const imageEmbedder = hashImageEmbedder(imageSpace.dimensions);

/** Audit action names are part of the contract: surfaces show them. */
export const auditActions = { add: "session.add", forget: "forget" } as const;

export const base = Date.parse("2024-05-08T10:00:00Z");
export const hour = 3_600_000;

export interface ImageSpec {
  readonly data: Uint8Array;
  readonly caption?: string | null;
  readonly derivedText?: string | null;
  readonly origin?: string | null;
}

export interface TurnSpec {
  readonly speaker?: string | null;
  readonly role?: string | null;
  readonly text: string;
  /** What lexical search reads instead of `text` (contextual index text); `text` when absent. */
  readonly indexText?: string;
  readonly timeMs?: number;
  readonly uri?: string | null;
  readonly metadata?: Record<string, unknown>;
  readonly images?: readonly ImageSpec[];
}

export interface SessionSpec {
  readonly key: string;
  readonly timeMs?: number;
  readonly source?: string | null;
  readonly turns: readonly TurnSpec[];
}

export const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest("hex");

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
      ...(turnSpec.indexText === undefined ? {} : { indexText: turnSpec.indexText }),
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

/**
 * Single-session writes as one `commitSessions` batch: each plan's `@n` (its own raw nodes) moved to
 * the batch's numbering, where `@n` counts the raw nodes of every write before it too.
 */
export function asBatch(writes: readonly SessionWrite[]): SessionWrite[] {
  let offset = 0;
  return writes.map((write) => {
    const shift = offset;
    offset += write.rawNodes.length;
    const ops = write.index.plan.ops.map((op) =>
      op.op === "link"
        ? {
            ...op,
            pointers: op.pointers.map((pointer) =>
              pointer.startsWith("@") ? `@${Number(pointer.slice(1)) + shift}` : pointer,
            ),
          }
        : op,
    );
    return { ...write, index: { ...write.index, plan: { ...write.index.plan, ops } } };
  });
}

/** One new entry over all the session's raw nodes: a plan that does not depend on the index's state. */
export async function addOnlyPlan(
  key: string,
  rawNodes: readonly RawNodeWrite[],
  timeMs: number,
): Promise<MaintenancePlan> {
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

export async function embedText(text: string): Promise<Float32Array> {
  const [vector] = await textEmbedder.embed([text]);
  assert.ok(vector);
  return vector;
}

export async function embedImage(data: Uint8Array): Promise<Float32Array> {
  const [vector] = await imageEmbedder.embedImages([data]);
  assert.ok(vector);
  return vector;
}

let imageCache: Promise<{ red: Buffer; blue: Buffer; green: Buffer; yellow: Buffer }> | undefined;
/** Four small, distinct real PNGs, drawn once per process. */
export function images() {
  imageCache ??= (async () => ({
    red: await drawPng({ shape: "circle", color: "#d22", background: "#fff" }),
    blue: await drawPng({ shape: "square", color: "#22d", background: "#eee" }),
    green: await drawPng({ shape: "stripes", color: "#2a2", background: "#000" }),
    yellow: await drawPng({ shape: "circle", color: "#dd2", background: "#333", size: 64 }),
  }))();
  return imageCache;
}

export async function expectNotFound(promise: Promise<unknown>, message: string): Promise<NotFoundError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof NotFoundError, `${message}: expected NotFoundError, got ${String(caught)}`);
  return caught;
}

export async function expectConflict(promise: Promise<unknown>, message: string): Promise<void> {
  await assert.rejects(promise, (error) => error instanceof ConflictError, message);
}

export const ids = (ranked: readonly { id: string }[]) => ranked.map((hit) => hit.id);

export function assertDescending(scores: readonly { score: number }[], message: string): void {
  for (let i = 1; i < scores.length; i++) {
    assert.ok(
      (scores[i - 1]?.score ?? 0) >= (scores[i]?.score ?? 0),
      `${message}: scores must be best first, got ${scores.map((s) => s.score).join(", ")}`,
    );
  }
}

/** Vectors agree within 1e-6 (they cross the store as float32), or both are null. */
export function assertClose(actual: Float32Array | null, expected: Float32Array | null, message: string): void {
  if (actual === null || expected === null) {
    assert.equal(actual, expected, message);
    return;
  }
  assert.equal(actual.length, expected.length, `${message}: dimensions`);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(
      Math.abs((actual[i] ?? Number.NaN) - (expected[i] ?? Number.NaN)) <= 1e-6,
      `${message}: component ${i} is ${actual[i]}, expected ${expected[i]}`,
    );
  }
}

/** Everything a scope can list, to prove that an operation changed nothing. */
export async function observe(scoped: ScopedStore) {
  const sessions = await scoped.readSessions({});
  const nodes = await Promise.all(sessions.map((session) => scoped.readRawNodes({ sessionId: session.id })));
  return {
    stats: await scoped.stats(),
    sessions,
    nodes,
    entries: await listEntries(scoped),
    audit: await scoped.readAudit(),
  };
}
/** Four raw nodes over three sessions, two speakers and two days, all mentioning marmalade. */
export async function filterFixture(a: ScopedStore) {
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

export function assertNoRawText(audit: readonly unknown[], words: readonly string[]): void {
  const serialised = JSON.stringify(audit).toLowerCase();
  for (const word of words) {
    assert.ok(!serialised.includes(word.toLowerCase()), `audit log holds raw text "${word}": ${serialised}`);
  }
}

// ── The case registry ──────────────────────────────────────────────────────────────────────────

/** The seam's three groups, each with its own conformance file. */
export type SeamGroup = "cold store" | "channel index" | "active index" | "question bank" | "video memory" | "transfer";

/**
 * One case: it gets a fresh store, which the suite closes, its test context, and a way to open
 * another fresh store of the same backend (closed by the suite too), for cases that copy between two.
 */
export interface ConformanceCase {
  readonly name: string;
  readonly run: (store: Store, t: TestContext, another: () => Promise<Store>) => Promise<void>;
}

export interface ConformanceGroup {
  readonly name: SeamGroup;
  /** In the order they run. */
  readonly cases: readonly ConformanceCase[];
}

/** A group and its cases, registered in order by `register`. */
export function defineGroup(
  name: SeamGroup,
  register: (test: (caseName: string, run: ConformanceCase["run"]) => void) => void,
): ConformanceGroup {
  const cases: ConformanceCase[] = [];
  register((caseName, run) => cases.push({ name: caseName, run }));
  return { name, cases };
}

// ── Seam coverage ─────────────────────────────────────────────────────────────────────────────

/**
 * Every method of `ScopedStore` and the group whose conformance file covers it. Exhaustive by
 * type: a method added to the seam without an entry here fails type-check, and the coverage case
 * then fails until some case calls it.
 */
export const seamMethods = {
  commitSession: "cold store",
  commitSessions: "cold store",
  readSessions: "cold store",
  readRawNodes: "cold store",
  readBlob: "cold store",
  knownImages: "cold store",
  forget: "cold store",
  readAudit: "cold store",
  stats: "cold store",
  searchLexical: "channel index",
  searchVectors: "channel index",
  readVectors: "channel index",
  vectorSpacesInUse: "channel index",
  replaceVectors: "channel index",
  readIndex: "active index",
  indexStatus: "active index",
  readLinkedEntries: "active index",
  applyIndexPlan: "active index",
  admitPrograms: "question bank",
  readBank: "question bank",
  retirePrograms: "question bank",
  refreshPrograms: "question bank",
  commitVideo: "video memory",
  readVideoItems: "video memory",
  readNotifierState: "video memory",
  readNotifierStreams: "video memory",
  importSession: "transfer",
  readSessionParts: "transfer",
  restoreIndexAndAudit: "transfer",
} as const satisfies Record<Exclude<keyof ScopedStore, "scope">, SeamGroup>;

export type SeamMethod = keyof typeof seamMethods;

export const seamMethodNames = Object.keys(seamMethods) as SeamMethod[];

const isSeamMethod = (property: string | symbol): property is SeamMethod =>
  typeof property === "string" && Object.hasOwn(seamMethods, property);

/**
 * Records every call to a seam method made through the stores of one backend's run: the suite
 * opens each store through `wrap`, so calls made by the cases and by the maintenance code they
 * drive (forget planning, entry listing) are all seen. It also records any `limit` that is not a
 * non-negative integer: "all" is an absent limit, never -1.
 */
export class SeamCoverage {
  readonly #calls = new Map<SeamMethod, number>();
  readonly #badLimits: string[] = [];
  readonly #ran = new Set<string>();

  wrap(store: Store): Store {
    return new Proxy(store, {
      get: (target, property) => {
        if (property === "forScope") return (scope: Scope) => this.#wrapScoped(target.forScope(scope));
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  /** Marks a case as run (whatever its outcome), so the coverage case knows whether it saw the whole run. */
  ran(caseName: string): void {
    this.#ran.add(caseName);
  }

  casesRun(): ReadonlySet<string> {
    return this.#ran;
  }

  calls(method: SeamMethod): number {
    return this.#calls.get(method) ?? 0;
  }

  badLimits(): readonly string[] {
    return this.#badLimits;
  }

  #wrapScoped(scoped: ScopedStore): ScopedStore {
    return new Proxy(scoped, {
      get: (target, property) => {
        const value: unknown = Reflect.get(target, property, target);
        if (typeof value !== "function") return value;
        if (!isSeamMethod(property)) return value.bind(target);
        return (...args: unknown[]) => {
          this.#record(property, args);
          return value.apply(target, args);
        };
      },
    });
  }

  #record(method: SeamMethod, args: readonly unknown[]): void {
    this.#calls.set(method, this.calls(method) + 1);
    for (const arg of args) {
      if (typeof arg !== "object" || arg === null || !("limit" in arg)) continue;
      const { limit } = arg;
      if (limit !== undefined && !(Number.isInteger(limit) && Number(limit) >= 0)) {
        this.#badLimits.push(`${method}({ limit: ${String(limit)} })`);
      }
    }
  }
}
