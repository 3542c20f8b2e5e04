import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import sharp from "sharp";
import { InputError } from "../../src/core/errors.ts";
import type { Scope } from "../../src/core/scope.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { startTestServer, type TestServer } from "../http/support.ts";
import { cairnProcess } from "../support/cairn-process.ts";
import { drawPng, writeFile } from "../support/fixtures.ts";
import { snapshotTree } from "../support/store-snapshot.ts";

/**
 * The bad-input corpus (issue 18, part 4): every input here must be refused with a typed error
 * naming the field (SDK: `InputError`; CLI: exit 2 and `field` in the JSON error; HTTP: 400 and
 * `error.field`), nothing may hang, and the store's files must be byte for byte what they were.
 * Each surface prints its counts: tried / refused / store changed.
 */

const time = "2024-05-08T13:56:00Z";
const scope: Scope = { tenant: "default", user: "default" };
type Surface = "sdk" | "cli" | "http";
const allSurfaces: readonly Surface[] = ["sdk", "cli", "http"];

interface Corpus {
  readonly name: string;
  /** The session as a JS value (SDK) and, when `json` is not given, as JSON for the CLI and HTTP. */
  readonly session: (dirs: Dirs) => unknown;
  /** The JSON text of the session where `JSON.stringify` cannot make it (100,000 levels deep). */
  readonly json?: string;
  /** The field, as the end of what each surface reports (the CLI prefixes `line N: `, HTTP may prefix `body.`). */
  readonly field: RegExp;
  readonly surfaces?: readonly Surface[];
}

interface Dirs {
  readonly inputDir: string;
  readonly stallingUrl: string;
}

const session = (turns: unknown[], extra: Record<string, unknown> = {}) => ({ session: "bad", time, turns, ...extra });
const textTurn = (extra: Record<string, unknown> = {}) => ({ speaker: "Ana", text: "hello there", ...extra });
const deepObject = (depth: number): Record<string, unknown> => {
  let value: Record<string, unknown> = { leaf: 1 };
  for (let level = 1; level < depth; level++) value = { a: value };
  return value;
};
const deepJson = (depth: number) =>
  `{"session":"bad","time":"${time}","turns":[{"text":"deep","metadata":${'{"a":'.repeat(depth - 1)}{"leaf":1}${"}".repeat(depth - 1)}}]}`;

const corpus: Corpus[] = [
  { name: "time 'hello 2024'", session: () => session([textTurn()], { time: "hello 2024" }), field: /(^|\W)time$/ },
  { name: "time '1'", session: () => session([textTurn()], { time: "1" }), field: /(^|\W)time$/ },
  { name: "time '5'", session: () => session([textTurn()], { time: "5" }), field: /(^|\W)time$/ },
  {
    name: "time on 31 February",
    session: () => session([textTurn()], { time: "2024-02-31T00:00:00Z" }),
    field: /(^|\W)time$/,
  },
  {
    name: "time without an offset",
    session: () => session([textTurn()], { time: "2024-05-08T13:56:00" }),
    field: /(^|\W)time$/,
  },
  { name: "date only", session: () => session([textTurn()], { time: "2024-05-08" }), field: /(^|\W)time$/ },
  {
    name: "turn time in month 13",
    session: () => session([textTurn({ time: "2024-13-01T00:00:00Z" })]),
    field: /turns\[0\]\.time$/,
  },
  { name: "time as a number", session: () => session([textTurn()], { time: 1715176560000 }), field: /(^|\W)time$/ },
  { name: "text as a number", session: () => session([textTurn({ text: 123 })]), field: /turns\[0\]\.text$/ },
  { name: "speaker as a number", session: () => session([textTurn({ speaker: 42 })]), field: /turns\[0\]\.speaker$/ },
  { name: "session key as a number", session: () => session([textTurn()], { session: 7 }), field: /session$/ },
  { name: "turns as a string", session: () => ({ session: "bad", time, turns: "hi" }), field: /turns$/ },
  { name: "unknown turn field", session: () => session([textTurn({ txet: "typo" })]), field: /turns\[0\]$/ },
  {
    name: "a lone surrogate in text",
    session: () => session([textTurn({ text: "broken \ud800 text" })]),
    field: /turns\[0\]\.text$/,
  },
  {
    name: "a lone low surrogate in a speaker",
    session: () => session([textTurn({ speaker: "A\udc00na" })]),
    field: /turns\[0\]\.speaker$/,
  },
  {
    name: "a lone surrogate in the session key",
    session: () => session([textTurn()], { session: "key\ud83d" }),
    field: /session$/,
  },
  {
    name: "a lone surrogate in a metadata key",
    session: () => session([textTurn({ metadata: { "tag\ud800": 1 } })]),
    field: /turns\[0\]\.metadata\.tag.$/u,
  },
  {
    name: "metadata nested 100,000 deep",
    session: () => session([textTurn({ metadata: deepObject(100_000) })]),
    json: deepJson(100_000),
    field: /turns\[0\]\.metadata$/,
  },
  {
    name: "metadata one level over maxMetadataDepth",
    session: () => session([textTurn({ metadata: deepObject(33) })]),
    field: /turns\[0\]\.metadata$/,
  },
  {
    name: "metadata over maxMetadataBytes",
    session: () => session([textTurn({ metadata: { blob: "x".repeat(70_000) } })]),
    field: /turns\[0\]\.metadata$/,
  },
  { name: "metadata as an array", session: () => session([textTurn({ metadata: [1, 2] })]), field: /metadata$/ },
  {
    name: "a JPEG with corrupted scan data",
    session: () => session([textTurn({ images: [{ path: "garbled.jpg" }] })]),
    field: /turns\[0\]\.images\[0\]$/,
    surfaces: ["sdk", "cli"],
  },
  {
    name: "a truncated JPEG",
    session: () => session([textTurn({ images: [{ path: "truncated.jpg" }] })]),
    field: /turns\[0\]\.images\[0\]$/,
    surfaces: ["sdk", "cli"],
  },
  {
    name: "a FIFO named x.png",
    session: () => session([textTurn({ images: [{ path: "x.png" }] })]),
    field: /turns\[0\]\.images\[0\]\.path$/,
    surfaces: ["sdk", "cli"],
  },
  {
    name: "a folder named dir.png",
    session: () => session([textTurn({ images: [{ path: "dir.png" }] })]),
    field: /turns\[0\]\.images\[0\]\.path$/,
    surfaces: ["sdk", "cli"],
  },
  {
    name: "a remote image whose body stalls",
    session: ({ stallingUrl }) => session([textTurn({ images: [{ url: stallingUrl }] })]),
    field: /turns\[0\]\.images\[0\]\.url$/,
    surfaces: ["sdk"],
  },
  {
    name: "circular metadata",
    session: () => {
      const metadata: Record<string, unknown> = { name: "loop" };
      metadata.self = metadata;
      return session([textTurn({ metadata })]);
    },
    field: /turns\[0\]\.metadata\.self$/,
    surfaces: ["sdk"],
  },
  {
    name: "BigInt metadata",
    session: () => session([textTurn({ metadata: { n: 10n } })]),
    field: /turns\[0\]\.metadata\.n$/,
    surfaces: ["sdk"],
  },
  {
    name: "a Date in metadata",
    session: () => session([textTurn({ metadata: { at: new Date(0) } })]),
    field: /turns\[0\]\.metadata\.at$/,
    surfaces: ["sdk"],
  },
  {
    name: "NaN in metadata",
    session: () => session([textTurn({ metadata: { score: Number.NaN } })]),
    field: /turns\[0\]\.metadata\.score$/,
    surfaces: ["sdk"],
  },
  {
    name: "a function in metadata",
    session: () => session([textTurn({ metadata: { run: () => 1 } })]),
    field: /turns\[0\]\.metadata\.run$/,
    surfaces: ["sdk"],
  },
];

/** Base64 images for HTTP, where local paths are refused by design. */
const httpImageCases = ["garbled.jpg", "truncated.jpg"] as const;

interface Counts {
  tried: number;
  refused: number;
  changed: number;
}
const counts: Record<Surface, Counts> = {
  sdk: { tried: 0, refused: 0, changed: 0 },
  cli: { tried: 0, refused: 0, changed: 0 },
  http: { tried: 0, refused: 0, changed: 0 },
};

/** Runs `check`, counting the attempt, the refusal (check returned) and any change to the store's files. */
async function attempt(surface: Surface, storeDir: string, check: () => Promise<void> | void): Promise<void> {
  const before = snapshotTree(storeDir);
  counts[surface].tried++;
  try {
    await check();
    counts[surface].refused++;
  } finally {
    const same = JSON.stringify(snapshotTree(storeDir)) === JSON.stringify(before);
    if (!same) counts[surface].changed++;
    assert.ok(same, "the store's files are byte for byte unchanged");
  }
}

const _bin = join(import.meta.dirname, "../../bin/cairn.js");

/** The CLI as a process, with a deadline: a hang is a failure, not a stuck suite. */
function cairn(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return cairnProcess([...args, "--profile", "hash", "--json"]);
}

let root: string;
let inputDir: string;
let stall: Server;
let stallingUrl: string;

before(async () => {
  root = mkdtempSync(join(tmpdir(), "cairn-corpus-"));
  inputDir = join(root, "input");
  mkdirSync(inputDir);
  writeFile(inputDir, "ok.png", await drawPng({ shape: "square", color: "#36c" }));
  const jpeg = await sharp(await drawPng({ shape: "circle", color: "#c33", background: "#3a7" }))
    .jpeg({ quality: 90 })
    .toBuffer();
  const scan = jpeg.indexOf(Buffer.from([0xff, 0xda]));
  assert.ok(scan > 0, "the JPEG has a start-of-scan marker");
  const garbled = Buffer.from(jpeg);
  for (let at = scan + 40; at < jpeg.length - 2; at += 7) garbled[at] = (garbled[at] as number) ^ 0x5a;
  writeFile(inputDir, "garbled.jpg", garbled);
  writeFile(inputDir, "truncated.jpg", jpeg.subarray(0, scan + Math.floor((jpeg.length - scan) / 2)));
  mkdirSync(join(inputDir, "dir.png"));
  const fifo = spawnSync("mkfifo", [join(inputDir, "x.png")]);
  assert.equal(fifo.status, 0, "mkfifo works here");
  // Headers and a first chunk, then nothing: the body never completes.
  stall = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "image/png", "content-length": "100000" });
    response.write(Buffer.alloc(100));
  });
  await new Promise<void>((resolve) => stall.listen(0, "127.0.0.1", resolve));
  stallingUrl = `http://127.0.0.1:${(stall.address() as AddressInfo).port}/slow.png`;
});

after(() => {
  stall?.closeAllConnections();
  stall?.close();
  rmSync(root, { recursive: true, force: true });
  for (const surface of allSurfaces) {
    const { tried, refused, changed } = counts[surface];
    console.log(`bad-input corpus ${surface}: tried ${tried} / refused ${refused} / store changed ${changed}`);
  }
});

const dirs = (): Dirs => ({ inputDir, stallingUrl });
const on = (surface: Surface) => corpus.filter((entry) => (entry.surfaces ?? allSurfaces).includes(surface));

describe("bad-input corpus through the SDK", () => {
  let memory: Memory;
  let storeDir: string;
  before(async () => {
    storeDir = join(root, "sdk-store");
    memory = await Memory.open({
      path: storeDir,
      models: createHashModels(),
      allowRemoteImages: true,
      limits: { imageFetchTimeoutMs: 500 },
    });
    await memory.addSession(
      scope,
      { session: "kept", time, turns: [textTurn({ images: [{ path: "ok.png" }] })] },
      {
        baseDir: inputDir,
      },
    );
  });
  after(() => memory?.close());

  for (const entry of on("sdk")) {
    it(`${entry.name} → InputError`, async () => {
      await attempt("sdk", storeDir, () =>
        assert.rejects(memory.addSession(scope, entry.session(dirs()), { baseDir: inputDir }), (error) => {
          assert.ok(error instanceof InputError, `expected InputError, got ${(error as Error)?.stack ?? error}`);
          assert.match(error.field, entry.field);
          return true;
        }),
      );
    });
  }

  it("a search filter time that is not RFC 3339 → InputError at filters.from / filters.to", async () => {
    for (const filters of [{ from: "1" }, { to: "hello 2024" }, { from: "2024-02-30T00:00:00Z" }]) {
      await attempt("sdk", storeDir, () =>
        assert.rejects(memory.search(scope, "hello", { filters }), (error) => {
          assert.ok(error instanceof InputError, String(error));
          assert.match(error.field, /^filters\.(from|to)$/);
          return true;
        }),
      );
    }
  });
});

// Each case gets its own copy of the seeded store, so one case's outcome cannot hide or cause another's.
// The processes run one at a time: side by side they were no faster here (CPU-bound start-up).
describe("bad-input corpus through the CLI (a process; exit 2 and nothing written)", () => {
  let seeded: string;
  let copies = 0;
  const good = JSON.stringify({ session: "good-line", time, turns: [textTurn()] });
  before(async () => {
    seeded = join(root, "cli-store");
    writeFile(inputDir, "seed.jsonl", `${JSON.stringify({ session: "kept", time, turns: [textTurn()] })}\n`);
    const result = await cairn(["ingest", "--tenant", "default", join(inputDir, "seed.jsonl"), "--db", seeded]);
    assert.equal(result.code, 0, result.stderr);
  });
  /** A fresh copy of the seeded store (closed by the seeding process, so its files are settled). */
  const storeCopy = () => {
    const dir = join(root, `cli-store-${++copies}`);
    cpSync(seeded, dir, { recursive: true });
    return dir;
  };

  /** The bad line comes second, after a valid one: the valid line must not be written either. */
  async function refuses(lines: (string | Buffer)[], expected: { code: number; line?: number; field?: RegExp }) {
    const storeDir = storeCopy();
    const file = writeFile(
      inputDir,
      `bad-${copies}.jsonl`,
      Buffer.concat(lines.flatMap((line) => [Buffer.from(line), Buffer.from("\n")])),
    );
    await attempt("cli", storeDir, async () => {
      const result = await cairn(["ingest", "--tenant", "default", file, "--db", storeDir]);
      assert.equal(result.code, expected.code, `exit code (stderr: ${result.stderr})`);
      const { error } = JSON.parse(result.stderr);
      const prefix = expected.line === undefined ? "" : `line ${expected.line}: `;
      if (prefix) assert.ok(String(error.field).startsWith(prefix), `field ${error.field} names line ${expected.line}`);
      if (expected.field) assert.match(String(error.field).slice(prefix.length), expected.field);
    });
  }

  for (const entry of on("cli")) {
    it(`${entry.name} → exit 2`, async () => {
      const line = entry.json ?? JSON.stringify(entry.session(dirs()));
      await refuses([good, line], { code: 2, line: 2, field: entry.field });
    });
  }

  it("invalid UTF-8 → exit 2 naming the line", async () => {
    const bad = Buffer.concat([
      Buffer.from('{"session":"u","time":"'),
      Buffer.from(time),
      Buffer.from('","turns":[{"text":"caf'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}]}'),
    ]);
    await refuses([good, bad], { code: 2, field: /^line 2$/ });
  });

  it('"user": 123 → exit 2, not stored under the default user', async () => {
    const line = JSON.stringify({ session: "typed", user: 123, time, turns: [textTurn()] });
    await refuses([good, line], { code: 2, field: /^line 2: scope\.user$/ });
  });

  it('"tenant": null → exit 2', async () => {
    const line = JSON.stringify({ session: "typed", tenant: null, time, turns: [textTurn()] });
    await refuses([good, line], { code: 2, field: /^line 2: scope\.tenant$/ });
  });

  it("one session key twice in the file with other content → exit 2, nothing written", async () => {
    const first = JSON.stringify({ session: "twice", time, turns: [textTurn({ text: "first version" })] });
    const second = JSON.stringify({ session: "twice", time, turns: [textTurn({ text: "second version" })] });
    await refuses([first, second], { code: 2, field: /^line 2: session$/ });
  });

  it("a session key already stored with other content → exit 4 (conflict), nothing written", async () => {
    const changed = JSON.stringify({ session: "kept", time, turns: [textTurn({ text: "a rewritten history" })] });
    await refuses([good, changed], { code: 4 });
  });

  it("the input file is a FIFO → exit 2, no hang", async () => {
    const storeDir = storeCopy();
    await attempt("cli", storeDir, async () => {
      const result = await cairn(["ingest", "--tenant", "default", join(inputDir, "x.png"), "--db", storeDir]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(JSON.parse(result.stderr).error.message, /FIFO/);
    });
  });

  it("search --from that is not RFC 3339 → exit 2", async () => {
    const storeDir = storeCopy();
    await attempt("cli", storeDir, async () => {
      const result = await cairn(["search", "--tenant", "default", "hello", "--from", "1", "--db", storeDir]);
      assert.equal(result.code, 2, result.stderr);
      assert.equal(JSON.parse(result.stderr).error.field, "filters.from");
    });
  });

  it("a file that repeats a stored session unchanged is still accepted (control)", async () => {
    const same = await cairn(["ingest", "--tenant", "default", join(inputDir, "seed.jsonl"), "--db", storeCopy()]);
    assert.equal(same.code, 0, same.stderr);
    assert.equal(JSON.parse(same.stdout).duplicates, 1);
  });
});

describe("bad-input corpus over HTTP (400 with the field, never 500)", () => {
  // One server for the corpus; its test hook fails the suite if any request was answered 500.
  let server: TestServer;
  const closers: (() => Promise<void> | void)[] = [];
  before(async () => {
    server = await startTestServer({ after: (fn) => closers.push(fn) }, { auth: false });
    await seed(server.memory);
  });
  after(async () => {
    for (const close of closers) await close();
  });

  for (const entry of on("http")) {
    it(`${entry.name} → 400`, async () => {
      await attempt("http", server.dir, async () => {
        const response = await server.request("/v1/sessions", {
          body: entry.json ?? JSON.stringify(entry.session(dirs())),
          headers: { "content-type": "application/json" },
        });
        const body = await response.json();
        assert.equal(response.status, 400, JSON.stringify(body));
        assert.match(body.error.field, entry.field);
      });
    });
  }

  for (const name of httpImageCases) {
    it(`${name} as base64 data → 400`, async () => {
      const data = readFileSync(join(inputDir, name)).toString("base64");
      await attempt("http", server.dir, async () => {
        const response = await server.request("/v1/sessions", { json: session([textTurn({ images: [{ data }] })]) });
        const body = await response.json();
        assert.equal(response.status, 400, JSON.stringify(body));
        assert.match(body.error.field, /turns\[0\]\.images\[0\]$/);
      });
    });
  }

  it("search filters that are not RFC 3339 → 400 at filters.from / filters.to", async () => {
    for (const filters of [{ from: "1" }, { to: "hello 2024" }, { from: "2024-02-31T00:00:00Z" }]) {
      await attempt("http", server.dir, async () => {
        const response = await server.request("/v1/search", { json: { text: "hello", filters } });
        const body = await response.json();
        assert.equal(response.status, 400, JSON.stringify(body));
        assert.match(body.error.field, /filters\.(from|to)$/);
      });
    }
  });
});

/** Something for a rejected input to damage. */
async function seed(memory: Memory): Promise<void> {
  await memory.addSession(scope, { session: "kept", time, turns: [textTurn()] });
}

describe("the corpus is refused everywhere", () => {
  it("every attempt was refused and no store changed", () => {
    for (const surface of allSurfaces) {
      const { tried, refused, changed } = counts[surface];
      assert.ok(tried > 0, `${surface}: the corpus ran`);
      assert.equal(refused, tried, `${surface}: every bad input refused`);
      assert.equal(changed, 0, `${surface}: no store changed`);
    }
  });
});
