/**
 * Ingest and search performance at scale, through the real SDK path.
 *
 *   npm run bench:perf                                  # hash and (if it loads) local, 10k and 100k
 *   npm run bench:perf -- --profile hash --sizes 10000  # one configuration
 *   npm run bench:perf -- --large                       # adds 1,000,000 raw nodes
 *
 * Each (profile, size) runs in its own child process, so its peak RSS is its own. Results go to
 * `<out>/perf-<profile>-<size>.json` and the table `<out>/perf.md` is regenerated from all of them.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { writeMarkdown, writeResult } from "./perf/report.ts";
import { type PerfConfig, type ProfileName, ProfileUnavailable, runConfig } from "./perf/run-config.ts";

/** Exit code of a child whose profile cannot load here (the driver skips its other sizes). */
const unavailableExit = 3;

const { values } = parseArgs({
  options: {
    profile: { type: "string", default: "hash,local" },
    sizes: { type: "string", default: "10000,100000" },
    large: { type: "boolean", default: false },
    out: { type: "string", default: "bench/results" },
    queries: { type: "string", default: "200" },
    "image-share": { type: "string", default: "0.05" },
    "embed-sample": { type: "string", default: "10000" },
    "exact-queries": { type: "string", default: "50" },
    /** Keep each configuration's store under `<out>/tmp/` for a closer look afterwards. */
    keep: { type: "boolean", default: false },
    child: { type: "boolean", default: false },
  },
});

const out = resolve(values.out);
mkdirSync(out, { recursive: true });
const profiles = values.profile.split(",").map((name) => parseProfile(name.trim()));
const sizes = [...values.sizes.split(",").map(Number), ...(values.large ? [1_000_000] : [])];
if (sizes.some((size) => !Number.isInteger(size) || size <= 0)) fail(`--sizes must be positive integers`);

if (values.child) await runChild(profiles[0] as ProfileName, sizes[0] as number);
else runAll();

/** One configuration, in this process. */
async function runChild(profile: ProfileName, size: number): Promise<void> {
  const config: PerfConfig = {
    profile,
    size,
    queries: Number(values.queries),
    imageShare: Number(values["image-share"]),
    embedSample: Number(values["embed-sample"]),
    exactQueries: Number(values["exact-queries"]),
    workDir: join(out, "tmp", `${profile}-${size}`),
    keepStore: values.keep,
  };
  try {
    const result = await runConfig(config, process.env.CAIRN_BENCH_COMMAND ?? "npm run bench:perf");
    console.log(`wrote ${writeResult(out, result)}`);
  } catch (error) {
    if (error instanceof ProfileUnavailable) {
      console.error(error.message);
      process.exit(unavailableExit);
    }
    throw error;
  }
}

function runAll(): void {
  const script = fileURLToPath(import.meta.url);
  const command = `npm run bench:perf${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`;
  const passOn = ["--out", out, "--queries", values.queries, "--image-share", values["image-share"]];
  passOn.push("--embed-sample", values["embed-sample"], "--exact-queries", values["exact-queries"]);
  if (values.keep) passOn.push("--keep");
  let failed = false;
  for (const profile of profiles) {
    for (const size of sizes) {
      console.log(`\n== ${profile}, ${size.toLocaleString("en-US")} raw nodes`);
      const child = spawnSync(
        process.execPath,
        [...process.execArgv, script, "--child", "--profile", profile, "--sizes", String(size), ...passOn],
        { stdio: "inherit", env: { ...process.env, CAIRN_BENCH_COMMAND: command } },
      );
      if (child.status === unavailableExit) {
        console.log(`skipping the ${profile} profile: its models do not load here`);
        break;
      }
      if (child.status !== 0) {
        console.error(`${profile} at ${size} failed (exit ${child.status ?? child.signal})`);
        failed = true;
      }
    }
  }
  console.log(`\nwrote ${writeMarkdown(out)}`);
  if (failed) process.exitCode = 1;
}

function parseProfile(name: string): ProfileName {
  if (name === "hash" || name === "local") return name;
  return fail(`unknown profile ${name} (hash, local)`);
}

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}
