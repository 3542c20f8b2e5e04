import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { it } from "node:test";
import BetterSqlite3 from "better-sqlite3";
import * as sqliteVec from "sqlite-vec";
import type { Scope } from "../../src/core/scope.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import type { Models } from "../../src/models/provider.ts";
import { openSqliteStore } from "../../src/store/open-store.ts";
import { imageSlots } from "../../src/store/sqlite/vector-rows.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";

/**
 * Forget erases (issue 18, part 2): once `forget` returns, nothing of what was forgotten (text,
 * OCR and caption text, metadata, session keys, vectors, image hashes and bytes) is anywhere in the
 * store's files: `cairn.db`, its WAL and shared memory, the ANN index files and the blob files,
 * with the writer still open and again after close. Markers are random, so a hit is never chance.
 */

const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");
/** Ends in a digit so the porter stemmer keeps the token whole; random so nothing else matches it. */
const marker = (label: string) => `${label}${randomBytes(8).toString("hex")}7`;

interface Needle {
  readonly what: string;
  readonly bytes: Buffer;
}

/** A marker as UTF-8, as UTF-16 (SQLite text in a UTF-16 database or a JS heap dump), and its tail (FTS5 prefix-compresses terms). */
function textNeedles(what: string, text: string): Needle[] {
  return [
    { what, bytes: Buffer.from(text, "utf8") },
    { what: `${what} (utf-16)`, bytes: Buffer.from(text, "utf16le") },
    { what: `${what} (tail)`, bytes: Buffer.from(text.slice(-12), "utf8") },
  ];
}

function filesUnder(root: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(root)) {
    const path = join(root, name);
    if (statSync(path).isDirectory()) out.push(...filesUnder(path));
    else out.push(path);
  }
  return out;
}

/** Every needle found in any file's bytes or name, as "what in file". */
function scan(root: string, needles: readonly Needle[]): string[] {
  const found: string[] = [];
  for (const path of filesUnder(root)) {
    const data = readFileSync(path);
    const name = relative(root, path);
    for (const needle of needles) {
      if (data.includes(needle.bytes) || name.includes(needle.bytes.toString("utf8"))) {
        found.push(`${needle.what} in ${name}`);
      }
    }
  }
  return found;
}

/** The stored vectors of some raw nodes, read behind Cairn's back: their bytes must go with them. */
function storedVectors(databasePath: string, rawNodeIds: readonly string[]): Needle[] {
  const db = new BetterSqlite3(databasePath, { readonly: true });
  try {
    sqliteVec.load(db);
    const needles: Needle[] = [];
    const spaces = db.prepare("SELECT kind, table_name FROM vector_spaces").all() as {
      kind: string;
      table_name: string;
    }[];
    for (const id of rawNodeIds) {
      const rowid = db.prepare("SELECT rowid FROM raw_nodes WHERE id = ?").pluck().get(id) as number;
      for (const space of spaces) {
        const [low, high] =
          space.kind === "text" ? [rowid, rowid] : [rowid * imageSlots, rowid * imageSlots + imageSlots - 1];
        const rows = db
          .prepare(`SELECT rowid, embedding FROM ${space.table_name} WHERE rowid BETWEEN ? AND ?`)
          .all(low, high) as { rowid: number; embedding: Buffer }[];
        for (const row of rows) {
          needles.push({ what: `vector ${space.table_name}:${row.rowid}`, bytes: row.embedding.subarray(0, 64) });
        }
      }
    }
    return needles;
  } finally {
    db.close();
  }
}

it("forgetting a session, a raw node and a whole user leaves none of their content in the store's files", async (t) => {
  const dir = tempDir(t);
  const storeDir = join(dir, "store");
  const keep: Scope = { tenant: "acme", user: "keeper" };
  const gone: Scope = { tenant: "acme", user: "leaver" };

  const markers = {
    sessionKey: marker("skey"),
    sessionText: marker("stext"),
    sessionCaption: marker("scap"),
    sessionOcr: marker("socr"),
    sessionMeta: marker("smeta"),
    rawNodeText: marker("ntext"),
    rawNodeMeta: marker("nmeta"),
    userKey: marker("ukey"),
    userText: marker("utext"),
    userCaption: marker("ucap"),
    userOcr: marker("uocr"),
    userMeta: marker("umeta"),
  };
  const survivorWord = marker("alive");
  const images = {
    session: await drawPng({ shape: "circle", color: "#123456", label: marker("i") }),
    user: await drawPng({ shape: "stripes", color: "#654321", label: marker("j") }),
    survivor: await drawPng({ shape: "square", color: "#0a0", label: marker("k") }),
  };
  writeFile(dir, "session.png", images.session);
  writeFile(dir, "user.png", images.user);
  writeFile(dir, "survivor.png", images.survivor);
  // An OCR-like reader: the derived text of each image is its own marker.
  const ocr = new Map([
    [sha256(images.session), `read ${markers.sessionOcr}`],
    [sha256(images.user), `read ${markers.userOcr}`],
    [sha256(images.survivor), `read ${survivorWord}`],
  ]);
  const models: Models = {
    ...createHashModels({ dimensions: 64 }),
    imageReaders: [
      {
        id: "marker-ocr",
        provider: "test",
        produces: "ocr",
        readImage: async (image) => ocr.get(sha256(image)) ?? "",
      },
    ],
  };
  // A low ANN threshold, so the scopes' HNSW indexes exist on disk before the forget.
  const open = async () =>
    Memory.open({ store: await openSqliteStore({ path: storeDir, vectorIndex: { minVectors: 2 } }), models });

  let memory = await open();
  const time = "2024-03-01T10:00:00Z";
  await memory.addSession(
    keep,
    {
      session: "survivor",
      time,
      turns: [
        { speaker: "Ana", text: `we keep ${survivorWord} forever` },
        { speaker: "Ana", text: "a photo", images: [{ path: "survivor.png", caption: "green square" }] },
      ],
    },
    { baseDir: dir },
  );
  await memory.addSession(
    keep,
    {
      session: markers.sessionKey,
      time: "2024-03-02T10:00:00Z",
      turns: [
        { speaker: "Ana", text: `secret ${markers.sessionText} plans`, metadata: { note: markers.sessionMeta } },
        { speaker: "Ana", text: "look", images: [{ path: "session.png", caption: `pic ${markers.sessionCaption}` }] },
      ],
    },
    { baseDir: dir },
  );
  const partial = await memory.addSession(keep, {
    session: "partial",
    time: "2024-03-03T10:00:00Z",
    turns: [
      { speaker: "Ana", text: `we also keep ${survivorWord} here` },
      { speaker: "Ana", text: `oops ${markers.rawNodeText} typed`, metadata: { note: markers.rawNodeMeta } },
    ],
  });
  const forgottenNode = partial.rawNodeIds[1];
  assert.ok(forgottenNode);
  const leaver = await memory.addSession(
    gone,
    {
      session: markers.userKey,
      time,
      turns: [
        { speaker: "Bo", text: `my ${markers.userText} diary`, metadata: { note: markers.userMeta } },
        { speaker: "Bo", text: "me", images: [{ path: "user.png", caption: `selfie ${markers.userCaption}` }] },
      ],
    },
    { baseDir: dir },
  );
  await memory.addSession(gone, { session: "second", time, turns: [{ text: `more ${markers.userText} notes` }] });
  for (const scope of [keep, gone]) {
    await memory.search(scope, "plans diary notes");
    await memory.search(scope, { image: { data: images.survivor } });
  }
  await memory.close();
  // Reopened, so the ANN files written at close are on disk when the forget runs.
  memory = await open();
  t.after(() => memory.close());
  const session = await memory.getSession(keep, markers.sessionKey);
  const forgottenSession = (await memory.listRawNodes(keep, session.id)).map((node) => node.id);
  const vectors = storedVectors(join(storeDir, "cairn.db"), [...forgottenSession, forgottenNode, ...leaver.rawNodeIds]);
  assert.ok(vectors.length >= 5, `vectors read: ${vectors.length}`);

  const needles: Needle[] = [...Object.entries(markers).flatMap(([what, text]) => textNeedles(what, text)), ...vectors];
  for (const [what, image] of [
    ["session image", images.session],
    ["user image", images.user],
  ] as const) {
    needles.push({ what: `${what} sha-256`, bytes: Buffer.from(sha256(image), "utf8") });
    needles.push({ what: `${what} sha-256 bytes`, bytes: createHash("sha256").update(image).digest() });
    needles.push({ what: `${what} bytes`, bytes: Buffer.from(image.subarray(64, 192)) });
  }
  assert.ok(filesUnder(join(storeDir, "ann")).length > 0, "the ANN indexes are on disk before the forget");
  const before = scan(storeDir, needles);
  assert.ok(before.length > needles.length / 2, `the scan sees the markers before forgetting: ${before.length}`);

  await memory.forget(keep, { session: markers.sessionKey });
  await memory.forget(keep, { rawNode: forgottenNode });
  await memory.forget(gone, { all: true });

  assert.deepEqual(scan(storeDir, needles), [], "nothing forgotten is left while the writer is open");
  const pack = await memory.search(keep, survivorWord);
  assert.ok(pack.items.length >= 2, "the surviving raw nodes are still found");
  const check = await memory.checkIndex(keep);
  assert.deepEqual(check.violations, []);
  assert.equal(check.rawNodes, 3);
  assert.equal((await memory.listSessions(gone)).length, 0);
  const audit = await memory.listAudit(gone);
  assert.equal(audit.length, 1, "a forgotten scope keeps one forget event");
  assert.equal(audit[0]?.action, "forget");

  await memory.close();
  assert.deepEqual(scan(storeDir, needles), [], "nothing forgotten is left after close");
});
