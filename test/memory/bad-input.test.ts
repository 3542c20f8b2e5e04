import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { crc32, deflateSync } from "node:zlib";
import { CairnError, ConflictError, InputError } from "../../src/core/errors.ts";
import type { Scope } from "../../src/core/scope.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import type { Models } from "../../src/models/provider.ts";
import { drawPng, writeFile } from "../support/fixtures.ts";
import { snapshotTree } from "../support/store-snapshot.ts";

/**
 * Invariant 5: a rejected `addSession` throws a typed error naming the offending place and
 * leaves the store folder exactly as it was.
 */

const scope: Scope = { tenant: "acme", user: "ana" };
const time = "2024-05-08T13:56:00Z";
const maxTextChars = 500;

/**
 * Every file under the store folder, by content hash, the WAL index included: a rejected input is
 * refused before the store is touched at all.
 */
const snapshot = (dir: string) => snapshotTree(dir);

/**
 * The same, less `cairn.db-shm`, for rejections that had to read the store first (a key conflict,
 * a failed commit). That file is SQLite's WAL index: every reader stamps a read mark into it, it
 * holds no rows, and it is rebuilt from the WAL after a crash. The database and the WAL, which hold
 * all the data, are still compared byte for byte, which is stricter than comparing a logical dump.
 */
function snapshotAfterRead(dir: string): Record<string, string> {
  const { "cairn.db-shm": _walIndex, ...files } = snapshotTree(dir);
  return files;
}

/** A real PNG whose header claims `side`×`side` px over a few kilobytes of zlib data. */
function decompressionBomb(side: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(side, 0);
  header.writeUInt32BE(side, 4);
  header[8] = 8; // bit depth
  header[9] = 0; // greyscale
  // Sixteen rows of zeros (filter byte + one sample per column): the rest is left to the imagination.
  const rows = deflateSync(Buffer.alloc(16 * (side + 1)), { level: 9 });
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", rows),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

interface BadCase {
  readonly name: string;
  readonly input: (dirs: { inputDir: string; outsideFile: string }) => unknown;
  readonly scope?: Scope;
  readonly noBaseDir?: boolean;
  readonly field: string;
  /** What the reason must say; omitted where only the type and the place are pinned. */
  readonly reason?: RegExp;
  readonly skip?: string;
}

const session = (turns: unknown[]) => ({ session: "bad", time, turns });
const imageTurn = (image: unknown, text = "look at this") => ({ speaker: "Ana", text, images: [image] });

const cases: BadCase[] = [
  {
    name: "an image file that does not exist",
    input: () => session([imageTurn({ path: "missing.png" })]),
    field: "turns[0].images[0].path",
    reason: /missing or unreadable/,
  },
  {
    name: "an image path that cannot be read (a folder)",
    input: () => session([imageTurn({ path: "folder.png" })]),
    field: "turns[0].images[0].path",
    reason: /missing or unreadable/,
  },
  {
    name: "an image file without read permission",
    input: () => session([imageTurn({ path: "no-permission.png" })]),
    field: "turns[0].images[0].path",
    reason: /missing or unreadable/,
    skip: process.getuid?.() === 0 ? "root reads files whatever their mode" : undefined,
  },
  {
    name: "random bytes named .png",
    input: () => session([imageTurn({ path: "random.png" })]),
    field: "turns[0].images[0]",
    reason: /not a readable image/,
  },
  {
    name: "a truncated PNG",
    input: () => session([imageTurn({ path: "truncated.png" })]),
    field: "turns[0].images[0]",
    reason: /could not be decoded/,
  },
  {
    name: "inline bytes of a truncated PNG",
    input: ({ inputDir }) =>
      session([imageTurn({ data: new Uint8Array(readFileSync(join(inputDir, "truncated.png"))) })]),
    field: "turns[0].images[0]",
    reason: /could not be decoded/,
  },
  {
    name: "a decompression bomb (header claims 10,000×10,000 px, over limits.maxImagePixels)",
    input: () => session([imageTurn({ path: "bomb-10k.png" })]),
    field: "turns[0].images[0]",
    reason: /10000×10000 px, limit is 40000000 px/,
  },
  {
    // The reason is pinned by its own test below.
    name: "a decompression bomb (header claims 50,000×50,000 px)",
    input: () => session([imageTurn({ path: "bomb-50k.png" })]),
    field: "turns[0].images[0]",
  },
  {
    name: "an image path climbing out of the input folder (../)",
    input: () => session([imageTurn({ path: "../outside.png" })]),
    field: "turns[0].images[0].path",
    reason: /leaves the input folder/,
  },
  {
    name: "an absolute image path",
    input: ({ outsideFile }) => session([imageTurn({ path: outsideFile })]),
    field: "turns[0].images[0].path",
    reason: /relative/,
  },
  {
    name: "a symlink in the input folder pointing outside it",
    input: () => session([imageTurn({ path: "link.png" })]),
    field: "turns[0].images[0].path",
    reason: /leaves the input folder/,
  },
  {
    name: "an image path with no input folder to resolve it against",
    input: () => session([imageTurn({ path: "ok.png" })]),
    noBaseDir: true,
    field: "turns[0].images[0].path",
    reason: /base folder/,
  },
  {
    name: "a URL image while remote images are not allowed",
    input: () => session([imageTurn({ url: "https://example.com/cat.png" })]),
    field: "turns[0].images[0].url",
    reason: /not fetched/,
  },
  {
    name: "an empty text with no images",
    input: () => session([{ speaker: "Ana", text: "" }]),
    field: "turns[0]",
    reason: /non-empty text or at least one image/,
  },
  {
    name: "a whitespace-only text with an empty image list",
    input: () => session([{ speaker: "Ana", text: " \n\t ", images: [] }]),
    field: "turns[0]",
    reason: /non-empty text or at least one image/,
  },
  {
    name: "an empty session (no turns)",
    input: () => session([]),
    field: "turns",
    reason: /at least one turn/,
  },
  {
    name: "an empty tenant id",
    input: () => session([{ text: "hello" }]),
    scope: { tenant: "", user: "ana" },
    field: "scope.tenant",
    reason: /1-128 characters/,
  },
  {
    name: "a user id containing '/'",
    input: () => session([{ text: "hello" }]),
    scope: { tenant: "acme", user: "ana/../bo" },
    field: "scope.user",
    reason: /1-128 characters/,
  },
  {
    name: "an agent id of 129 characters",
    input: () => session([{ text: "hello" }]),
    scope: { tenant: "acme", user: "ana", agent: "a".repeat(129) },
    field: "scope.agent",
    reason: /1-128 characters/,
  },
  {
    name: "a text over limits.maxTextChars",
    input: () => session([{ text: "ok" }, { text: "x".repeat(maxTextChars + 1) }]),
    field: "turns[1].text",
    reason: new RegExp(`at most ${maxTextChars}`),
  },
  {
    name: "a later turn failing after earlier valid turns with images",
    input: () =>
      session([
        imageTurn({ path: "ok.png", caption: "a valid picture" }, "first turn is fine"),
        { speaker: "Bo", text: "second turn is fine too" },
        imageTurn({ path: "missing.png" }, "third turn points at nothing"),
      ]),
    field: "turns[2].images[0].path",
    reason: /missing or unreadable/,
  },
];

describe("Memory.addSession rejects bad input and leaves the store folder unchanged", () => {
  let root: string;
  let storeDir: string;
  let inputDir: string;
  let outsideFile: string;
  let memory: Memory;
  const fetchCalls: string[] = [];

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "cairn-bad-input-"));
    storeDir = join(root, "store");
    inputDir = join(root, "input");
    mkdirSync(inputDir);
    const ok = await drawPng({ shape: "square", color: "#36c" });
    outsideFile = writeFile(root, "outside.png", await drawPng({ color: "#c63" }));
    writeFile(inputDir, "ok.png", ok);
    writeFile(inputDir, "random.png", randomBytes(2048));
    writeFile(inputDir, "truncated.png", ok.subarray(0, Math.floor(ok.length * 0.6)));
    writeFile(inputDir, "bomb-10k.png", decompressionBomb(10_000));
    writeFile(inputDir, "bomb-50k.png", decompressionBomb(50_000));
    chmodSync(writeFile(inputDir, "no-permission.png", ok), 0o000);
    mkdirSync(join(inputDir, "folder.png"));
    symlinkSync(outsideFile, join(inputDir, "link.png"));

    memory = await Memory.open({
      path: storeDir,
      models: createHashModels(),
      limits: { maxTextChars },
      fetch: async (url) => {
        fetchCalls.push(String(url));
        throw new Error("no network in tests");
      },
    });
    // Something to protect: a stored session with an image.
    await memory.addSession(
      scope,
      session([imageTurn({ path: "ok.png", caption: "a blue square" }, "the existing session")]),
      { baseDir: inputDir },
    );
  });

  after(async () => {
    await memory?.close();
    rmSync(root, { recursive: true, force: true });
  });

  for (const badCase of cases) {
    it(`${badCase.name} → InputError at ${badCase.field}`, { skip: badCase.skip }, async () => {
      const before = snapshot(storeDir);
      const statsBefore = await memory.stats(scope);
      await assert.rejects(
        memory.addSession(badCase.scope ?? scope, badCase.input({ inputDir, outsideFile }), {
          baseDir: badCase.noBaseDir ? undefined : inputDir,
        }),
        (error) => {
          assert.ok(error instanceof InputError, `expected InputError, got ${error}`);
          assert.equal(error.field, badCase.field);
          if (badCase.reason) assert.match(error.reason, badCase.reason);
          return true;
        },
      );
      assert.deepEqual(snapshot(storeDir), before, "the store folder is unchanged");
      assert.deepEqual(await memory.stats(scope), statsBefore);
      assert.deepEqual(fetchCalls, [], "nothing was fetched");
    });
  }

  it("a 50,000×50,000 px PNG is refused for its size, not called corrupt", async () => {
    await assert.rejects(
      memory.addSession(scope, session([imageTurn({ path: "bomb-50k.png" })]), { baseDir: inputDir }),
      (error) => error instanceof InputError && /50000×50000/.test(error.reason),
    );
  });

  it("a session key reused with other content → ConflictError, store unchanged", async () => {
    const before = snapshotAfterRead(storeDir);
    await assert.rejects(
      memory.addSession(scope, session([{ speaker: "Ana", text: "a rewritten history" }]), { baseDir: inputDir }),
      (error) => error instanceof ConflictError,
    );
    assert.deepEqual(snapshotAfterRead(storeDir), before);
  });

  it("the snapshot notices a real write, and the text limit is inclusive", async () => {
    const before = snapshot(storeDir);
    const result = await memory.addSession(
      scope,
      { session: "at-limit", time, turns: [{ text: "y".repeat(maxTextChars) }] },
      { baseDir: inputDir },
    );
    assert.equal(result.duplicate, false);
    assert.notDeepEqual(snapshot(storeDir), before, "an accepted session changes the store folder");
  });
});

describe("Memory.addSession with a misbehaving model provider", () => {
  it("a text embedder returning vectors of the wrong length → typed error, store folder unchanged", async (t) => {
    const root = mkdtempSync(join(tmpdir(), "cairn-bad-provider-"));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const models = createHashModels();
    const broken: Models = {
      ...models,
      text: { ...models.text, embed: async (texts) => texts.map(() => new Float32Array(models.text.dimensions - 1)) },
    };
    const memory = await Memory.open({ path: join(root, "store"), models: broken });
    t.after(() => memory.close());
    const before = snapshotAfterRead(join(root, "store"));
    await assert.rejects(
      memory.addSession(scope, session([{ text: "hello" }])),
      (error) => CairnError.is(error) && error.code !== "input",
    );
    assert.deepEqual(await memory.stats(scope), {
      sessions: 0,
      rawNodes: 0,
      images: 0,
      entries: 0,
      auditEvents: 0,
    });
    assert.deepEqual(snapshotAfterRead(join(root, "store")), before, "the store folder is unchanged");
  });
});
