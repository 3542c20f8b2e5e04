/**
 * What a user installs: the packed core alone and the core with the local models add-on, each
 * installed from its tarball into an empty project; and what `cairn --help` costs from the installed
 * package (wall time and peak RSS of the process, median of several runs).
 *
 *   npm run bench:footprint                   # rewrites the footprint section of BENCHMARKS.md
 *   npx tsx bench/footprint.ts --out DIR      # figures to DIR/footprint.json, BENCHMARKS.md untouched
 *   npx tsx bench/footprint.ts --runs 10      # more --help runs
 *
 * The installs use the npm cache (`--prefer-offline`) and `--ignore-scripts`: better-sqlite3's install
 * script downloads a prebuilt binary from GitHub (unreachable here, so it would compile SQLite for
 * minutes and leave its object files behind); the binary the repository's own install built for the same
 * version is copied in instead, which is the file a user's download puts there. Sizes are the bytes of
 * the files under node_modules (`du --apparent-size`), packages the entries npm records in
 * node_modules/.package-lock.json.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { replaceBenchmarksSection } from "./benchmarks-section.ts";

const { values } = parseArgs({
  options: { out: { type: "string" }, runs: { type: "string", default: "7" } },
});
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs takes a positive integer");

const root = join(import.meta.dirname, "..");

/**
 * The package before issue 16 (commit a463cab: name `cairn`, `exports` on `src/`, tsx and the models in
 * `dependencies`), measured once the same way: `git archive a463cab`, `npm pack`, installed with
 * `--prefer-offline --ignore-scripts` and better-sqlite3's binary copied in, `cairn --help` with the same
 * resource-usage hook, on the same machine as the figures above (its load then: about 34 on 2 cores).
 */
const before =
  "Before (commit a463cab, measured once the same way): 307 packages, 641.2 MB; `cairn --help` about 1.8 s CPU and 237 MB peak RSS (it compiled the TypeScript sources through tsx on every start).";
/** Issue 16's target for the core install. */
const target = { packages: 120, bytes: 120e6 };
/** Where the weight was, and what moved (2026-12-01), for the reader of the table. */
const weightNote =
  "What moved out of the core: the offline models (the `cairn-memory-models-local` add-on), the bench's plotting libraries (dev dependencies), and the MCP SDK with its Express stack (an optional peer dependency, installed by those who serve MCP; `cairn mcp` and `/mcp` without it say what to install). gpt-tokenizer 4.0.0 counts the same o200k tokens as 3.4.0 (0 differences over LoCoMo's 5,885 turns in a one-off comparison at the switch, with both versions installed side by side; this bench does not rerun it) in half the space (27 MB against 53 MB: 3.4.0 shipped three builds of every encoding). The largest packages left are gpt-tokenizer, better-sqlite3 (27 MB, mostly the SQLite sources it ships to compile from), usearch (21 MB of prebuilt binaries for every platform) and sharp's libvips (17 MB).";
const work = mkdtempSync(join(tmpdir(), "cairn-footprint-"));

function npm(args: string[], cwd: string): string {
  return execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
}

function version(dir: string): string {
  return (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version;
}

interface Install {
  readonly packages: number;
  readonly bytes: number;
  readonly seconds: number;
}

function install(name: string, tarballs: string[]): Install {
  const project = join(work, name);
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name, private: true, type: "module" }));
  const started = performance.now();
  npm(["install", "--prefer-offline", "--ignore-scripts", ...tarballs], project);
  const seconds = (performance.now() - started) / 1000;
  const binary = "build/Release/better_sqlite3.node";
  const target = join(project, "node_modules/better-sqlite3", binary);
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(join(root, "node_modules/better-sqlite3", binary), target);
  const lock = JSON.parse(readFileSync(join(project, "node_modules/.package-lock.json"), "utf8")) as {
    packages: Record<string, unknown>;
  };
  const bytes = Number(
    execFileSync("du", ["-s", "--apparent-size", "--block-size=1", join(project, "node_modules")], {
      encoding: "utf8",
    }).split("\t")[0],
  );
  return { packages: Object.keys(lock.packages).length, bytes, seconds };
}

/**
 * Median wall time, CPU time (user + system, which a loaded machine inflates less than wall time) and
 * peak RSS of `cairn --help` run from the installed package.
 */
function helpCost(project: string): { wallMs: number; cpuMs: number; rssMb: number } {
  const rss =
    'process.on("exit",()=>{const u=process.resourceUsage();process.stderr.write("maxrss "+u.maxRSS+" cpu "+(u.userCPUTime+u.systemCPUTime)+"\\n")})';
  const walls: number[] = [];
  const cpu: number[] = [];
  const peaks: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const result = spawnSync(
      process.execPath,
      [
        "--import",
        `data:text/javascript,${encodeURIComponent(rss)}`,
        join(project, "node_modules/cairn-memory/bin/cairn.js"),
        "--help",
      ],
      { cwd: project, encoding: "utf8" },
    );
    walls.push(performance.now() - started);
    if (result.status !== 0) throw new Error(`cairn --help failed: ${result.stderr}`);
    const usage = /maxrss (\d+) cpu (\d+)/.exec(result.stderr);
    peaks.push(Number(usage?.[1]) / 1024);
    cpu.push(Number(usage?.[2]) / 1000);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  return { wallMs: Math.round(median(walls)), cpuMs: Math.round(median(cpu)), rssMb: Math.round(median(peaks)) };
}

/** The local profile from the installed pair: one text embedding through the add-on. */
function localSmoke(project: string): number {
  const script = `import { createModels } from "cairn-memory";
const models = await createModels("local");
const [vector] = await models.text.embed(["where did Ana park the bike?"]);
await models.close();
console.log(vector.length);`;
  writeFileSync(join(project, "local.mjs"), script);
  const result = spawnSync(process.execPath, ["local.mjs"], { cwd: project, encoding: "utf8", timeout: 300_000 });
  if (result.status !== 0) throw new Error(`the local profile failed from the installed add-on: ${result.stderr}`);
  return Number(result.stdout.trim());
}

try {
  // prepack builds dist/ first.
  npm(["pack", "--pack-destination", work], root);
  npm(["pack", "--workspace", "packages/models-local", "--pack-destination", work], root);
  const core = join(work, `cairn-memory-${version(root)}.tgz`);
  const addon = join(work, `cairn-memory-models-local-${version(join(root, "packages/models-local"))}.tgz`);
  const coreOnly = install("core", [core]);
  const withModels = install("core-local", [core, addon]);
  const mcpSdk = `@modelcontextprotocol/sdk@${version(join(root, "node_modules/@modelcontextprotocol/sdk"))}`;
  const withMcp = install("core-mcp", [core, mcpSdk]);
  const help = helpCost(join(work, "core"));
  const dimensions = localSmoke(join(work, "core-local"));
  const result = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version, loadAtEnd: loadavg()[0] },
    tarballs: {
      core: Number(execFileSync("stat", ["-c", "%s", core], { encoding: "utf8" })),
      addon: Number(execFileSync("stat", ["-c", "%s", addon], { encoding: "utf8" })),
    },
    core: coreOnly,
    coreWithLocalModels: withModels,
    coreWithMcp: { ...withMcp, sdk: mcpSdk },
    help,
    localTextDimensions: dimensions,
  };
  console.log(JSON.stringify(result, null, 2));
  if (values.out) {
    mkdirSync(values.out, { recursive: true });
    writeFileSync(join(values.out, "footprint.json"), `${JSON.stringify(result, null, 2)}\n`);
  } else {
    writeFileSync(join(root, "bench/results/footprint.json"), `${JSON.stringify(result, null, 2)}\n`);
    replaceBenchmarksSection("footprint", "bench/footprint.ts", render(result));
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

function mb(bytes: number): string {
  return bytes < 1e6 ? `${(bytes / 1e3).toFixed(1)} KB` : `${(bytes / 1e6).toFixed(1)} MB`;
}

function render(result: {
  date: string;
  machine: object;
  tarballs: { core: number; addon: number };
  core: Install;
  coreWithLocalModels: Install;
  coreWithMcp: Install & { sdk: string };
  help: { wallMs: number; cpuMs: number; rssMb: number };
}): string {
  const { core, coreWithLocalModels: both, coreWithMcp: mcp, help } = result;
  const met = core.packages <= target.packages && core.bytes <= target.bytes;
  const verdict = `Issue 16's target for the core, at most ${target.packages} packages and ${mb(target.bytes)}: ${met ? "met" : "not met"} (${core.packages} packages, ${mb(core.bytes)}).`;
  return [
    "## Install footprint (issue 16)",
    "",
    `\`npm run bench:footprint\` (bench/footprint.ts): both packages packed with \`npm pack\`, installed from the tarballs into empty projects; ${JSON.stringify(result.machine)}; ${result.date}. Raw figures: \`bench/results/footprint.json\`.`,
    "",
    "| Install | Packages | node_modules | Tarball |",
    "|---|---|---|---|",
    `| \`cairn-memory\`: the core (store, channels, maintenance, routing, SDK, CLI, HTTP server and dashboard) | ${core.packages} | ${mb(core.bytes)} | ${mb(result.tarballs.core)} |`,
    `| \`cairn-memory\` + \`cairn-memory-models-local\` (the offline \`local\` profile) | ${both.packages} | ${mb(both.bytes)} | + ${mb(result.tarballs.addon)} |`,
    `| \`cairn-memory\` + \`${mcp.sdk}\` (the MCP server) | ${mcp.packages} | ${mb(mcp.bytes)} | from the registry |`,
    "",
    `\`cairn --help\` from the installed core: ${help.wallMs} ms wall, ${help.cpuMs} ms CPU (user + system), ${help.rssMb} MB peak RSS (medians of ${runs} runs, Node's start included; wall time follows the machine's load, CPU time much less).`,
    "",
    before,
    "",
    verdict,
    "",
    weightNote,
    "",
  ].join("\n");
}
