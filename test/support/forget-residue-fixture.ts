import { createHash, randomBytes } from "node:crypto";
import type { Scope } from "../../src/core/scope.ts";
import type { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import type { Models } from "../../src/models/provider.ts";
import { drawPng, writeFile } from "./fixtures.ts";

/**
 * The forget-residue scenario shared by every backend (issue 18, part 2): a survivor session, a
 * session, a raw node and a whole user to forget, each carrying random markers in text, captions,
 * OCR text, metadata and session keys, and three images. A backend's test decides where to look
 * (SQLite: every file of the store; Postgres: every row, and the cluster's files).
 */

export const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");
/** Ends in a digit so the stemmers keep the token whole; random so nothing else matches it. */
const marker = (label: string) => `${label}${randomBytes(8).toString("hex")}7`;

export interface Needle {
  readonly what: string;
  readonly bytes: Buffer;
}

/** A marker as UTF-8, as UTF-16 (SQLite text in a UTF-16 database or a JS heap dump), and its tail (FTS5 prefix-compresses terms). */
export function textNeedles(what: string, text: string): Needle[] {
  return [
    { what, bytes: Buffer.from(text, "utf8") },
    { what: `${what} (utf-16)`, bytes: Buffer.from(text, "utf16le") },
    { what: `${what} (tail)`, bytes: Buffer.from(text.slice(-12), "utf8") },
  ];
}

export interface ResidueScenario {
  readonly keep: Scope;
  readonly gone: Scope;
  readonly markers: Readonly<Record<string, string>>;
  /** A word only the surviving raw nodes hold: they must still be found. */
  readonly survivorWord: string;
  readonly images: { readonly session: Buffer; readonly user: Buffer; readonly survivor: Buffer };
  /** Hash models with an OCR-like reader whose derived text for each image is its own marker. */
  readonly models: Models;
  /** Writes the sessions (their images must be in `dir`, see `prepareResidueScenario`) and searches each scope. */
  populate(memory: Memory): Promise<{ forgottenNode: string; leaverNodes: readonly string[] }>;
  /** The raw nodes the forgets will remove, once populated. */
  forgottenNodes(
    memory: Memory,
    populated: { forgottenNode: string; leaverNodes: readonly string[] },
  ): Promise<string[]>;
  /** Forgets the marked session, the marked raw node and the whole leaving user. */
  forget(memory: Memory, forgottenNode: string): Promise<void>;
  /** Every text marker and the forgotten images' hashes (hex and raw) and bytes. */
  needles(): Needle[];
}

export async function prepareResidueScenario(dir: string): Promise<ResidueScenario> {
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
  const time = "2024-03-01T10:00:00Z";

  return {
    keep,
    gone,
    markers,
    survivorWord,
    images,
    models,
    async populate(memory) {
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
            {
              speaker: "Ana",
              text: "look",
              images: [{ path: "session.png", caption: `pic ${markers.sessionCaption}` }],
            },
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
      if (!forgottenNode) throw new Error("the partial session has two raw nodes");
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
      const second = await memory.addSession(gone, {
        session: "second",
        time,
        turns: [{ text: `more ${markers.userText} notes` }],
      });
      for (const scope of [keep, gone]) {
        await memory.search(scope, "plans diary notes");
        await memory.search(scope, { image: { data: images.survivor } });
      }
      return { forgottenNode, leaverNodes: [...leaver.rawNodeIds, ...second.rawNodeIds] };
    },
    async forgottenNodes(memory, populated) {
      const session = await memory.getSession(keep, markers.sessionKey);
      const inSession = (await memory.listRawNodes(keep, session.id)).map((node) => node.id);
      return [...inSession, populated.forgottenNode, ...populated.leaverNodes];
    },
    async forget(memory, forgottenNode) {
      await memory.forget(keep, { session: markers.sessionKey });
      await memory.forget(keep, { rawNode: forgottenNode });
      await memory.forget(gone, { all: true });
    },
    needles() {
      const needles: Needle[] = Object.entries(markers).flatMap(([what, text]) => textNeedles(what, text));
      for (const [what, image] of [
        ["session image", images.session],
        ["user image", images.user],
      ] as const) {
        needles.push({ what: `${what} sha-256`, bytes: Buffer.from(sha256(image), "utf8") });
        needles.push({ what: `${what} sha-256 bytes`, bytes: createHash("sha256").update(image).digest() });
        needles.push({ what: `${what} bytes`, bytes: Buffer.from(image.subarray(64, 192)) });
      }
      return needles;
    },
  };
}
