/**
 * Ingest and search performance at scale, through the real SDK path.
 *
 *   npm run bench:perf                                  # hash and (if it loads) local, 10k and 100k
 *   npm run bench:perf -- --profile hash --sizes 10000  # one configuration
 *   npm run bench:perf -- --large                       # adds 1,000,000 raw nodes
 *   npm run bench:perf -- --store postgres --profile hash --sizes 10000,100000
 *
 * Ingest is timed twice on SQLite: `Memory.addSession` one session a call (the ingest column, which the
 * Postgres comparison uses), and the same corpus into a second store through `Memory.addSessions`,
 * `--bulk-batch` sessions a call (default 32 at sizes up to 100,000 and none above; 0 skips it).
 *
 * `--store postgres` (same as `--store sqlite,postgres`) runs every configuration on SQLite and then on
 * Postgres in the same run (a database on CAIRN_BENCH_POSTGRES_URL or a throwaway local cluster), and
 * writes the pair with its ratios to `<out>/postgres-perf-vs-sqlite-<profile>-<size>.json` and the
 * table `<out>/postgres-perf.md`: the ratios are only meaningful from one run on one machine.
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
import { runPostgresConfig } from "./perf/run-postgres-config.ts";
import { compareStores, writePostgresResult, writeStoreMarkdown } from "./perf/store-comparison.ts";

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
    /** sqlite (default), or postgres / sqlite,postgres: both stores, side by side. */
    store: { type: "string", default: "sqlite" },
    /**
     * Sessions per `Memory.addSessions` call for the bulk ingest row (SQLite only); 0 leaves the row out.
     * Unset: 32, at sizes up to 100,000 (a second 1M ingest would double the longest run and its disk).
     */
    "bulk-batch": { type: "string" },
    child: { type: "boolean", default: false },
  },
});

const out = resolve(values.out);
mkdirSync(out, { recursive: true });
const profiles = values.profile.split(",").map((name) => parseProfile(name.trim()));
const sizes = [...values.sizes.split(",").map(Number), ...(values.large ? [1_000_000] : [])];
if (sizes.some((size) => !Number.isInteger(size) || size <= 0)) fail(`--sizes must be positive integers`);
const stores = parseStores(values.store);
const bulkBatch = Number(values["bulk-batch"] ?? 0);
if (!Number.isInteger(bulkBatch) || bulkBatch < 0) {
  fail("--bulk-batch must be a whole number of sessions (0: no bulk ingest row)");
}

if (values.child) await runChild(profiles[0] as ProfileName, sizes[0] as number, stores[0] as StoreName);
else runAll();

/** One configuration, in this process. */
async function runChild(profile: ProfileName, size: number, store: StoreName): Promise<void> {
  const config: PerfConfig = {
    profile,
    size,
    queries: Number(values.queries),
    imageShare: Number(values["image-share"]),
    embedSample: Number(values["embed-sample"]),
    exactQueries: Number(values["exact-queries"]),
    workDir: join(out, "tmp", `${profile}-${size}`),
    keepStore: values.keep,
    bulkBatch: values["bulk-batch"] === undefined ? (size <= 100_000 ? 32 : 0) : Number(values["bulk-batch"]),
  };
  const command = process.env.CAIRN_BENCH_COMMAND ?? "npm run bench:perf";
  try {
    if (store === "postgres") {
      console.log(`wrote ${writePostgresResult(out, await runPostgresConfig(config, command))}`);
    } else console.log(`wrote ${writeResult(out, await runConfig(config, command))}`);
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
  if (values["bulk-batch"] !== undefined) passOn.push("--bulk-batch", values["bulk-batch"]);
  if (values.keep) passOn.push("--keep");
  let failed = false;
  eachProfile: for (const profile of profiles) {
    for (const size of sizes) {
      for (const store of stores) {
        console.log(`\n== ${profile}, ${size.toLocaleString("en-US")} raw nodes, ${store}`);
        const args = ["--child", "--profile", profile, "--sizes", String(size), "--store", store, ...passOn];
        const child = spawnSync(process.execPath, [...process.execArgv, script, ...args], {
          stdio: "inherit",
          env: { ...process.env, CAIRN_BENCH_COMMAND: command },
        });
        if (child.status === unavailableExit) {
          console.log(`skipping the ${profile} profile: its models do not load here`);
          continue eachProfile;
        }
        if (child.status !== 0) {
          console.error(`${profile} at ${size} on ${store} failed (exit ${child.status ?? child.signal})`);
          failed = true;
        }
      }
      if (stores.length > 1) {
        const comparison = compareStores(out, profile, size);
        if (comparison) {
          const { ingest, searchP95 } = comparison.ratios;
          console.log(`Postgres ÷ SQLite: ingest ${ingest.toFixed(2)}, search p95 ${searchP95.toFixed(2)}`);
        }
      }
    }
  }
  if (stores.includes("sqlite")) console.log(`\nwrote ${writeMarkdown(out)}`);
  if (stores.length > 1) console.log(`wrote ${writeStoreMarkdown(out)}`);
  if (failed) process.exitCode = 1;
}

type StoreName = "sqlite" | "postgres";

/** `postgres` alone also runs SQLite: the Postgres figures are read against SQLite's from the same run. */
function parseStores(value: string): StoreName[] {
  const names = value.split(",").map((name) => name.trim());
  for (const name of names)
    if (name !== "sqlite" && name !== "postgres") fail(`unknown store ${name} (sqlite, postgres)`);
  if (values.child) return names as StoreName[];
  return names.includes("postgres") ? ["sqlite", "postgres"] : ["sqlite"];
}

function parseProfile(name: string): ProfileName {
  if (name === "hash" || name === "local") return name;
  return fail(`unknown profile ${name} (hash, local)`);
}

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}
