/**
 * Load test of the HTTP service against the SDK it wraps.
 *
 *   npm run bench:load                                    # hash profile, 16 clients, 60 s per phase
 *   npm run bench:load -- --profile local --seconds 30 --clients 8
 *   npm run bench:load -- --rate 20 --skip-postgres        # open loop: 20 operations/s arrive, however slow the answers
 *   npm run bench:load -- --rate 20 --read-workers 0,2 --out bench/results/read-pool   # HTTP phase per read-pool size
 *
 * 1. Pre-loads a synthetic corpus (bench/perf/corpus.ts) into a fresh store.
 * 2. In-process phase: `--clients` concurrent loops call Memory.add/search directly for `--seconds`.
 * 3. HTTP phase: a real `cairn serve` child process on loopback (API key auth on), the same loops
 *    over fetch for `--seconds`; once per `--read-workers` value (the SQLite read pool's threads, decision
 *    023; default: the server's own default only), each on a fresh server, the same schedule. The target
 *    compares the last of them with the in-process phase.
 * 4. Postgres phase: the same corpus pre-loaded into a Postgres database (CAIRN_BENCH_POSTGRES_URL or a
 *    throwaway local cluster), two `cairn serve --db postgres://…` children on it, the clients spread
 *    over both (client i → instance i mod 2), the same loops for `--seconds`. `--skip-postgres` leaves it
 *    out; without a Postgres it is skipped with the reason in the results.
 * All phases run the same mix (`--add-share` adds, the rest searches). By default the load is closed-loop
 * (`--clients` loops, each waiting for its answer before the next request, so a slow server is sent less);
 * with `--rate N` it is open-loop: operations arrive at N a second (exponential gaps, seeded) whether or not
 * the earlier ones have been answered, and each latency counts from its scheduled arrival, so time spent
 * queued behind other requests is measured instead of hidden. Results go to
 * `<out>/load.json` and `<out>/load.md`; the target is HTTP search p99 within 2× of in-process p99,
 * with zero errors, and zero errors on the two Postgres instances.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import cliProgress from "cli-progress";
import { openKeyStore } from "../src/auth/key-store.ts";
import { type BenchPostgres, openBenchPostgres } from "../src/bench/postgres/bench-postgres.ts";
import type { Scope } from "../src/core/scope.ts";
import type { SessionInput } from "../src/ingest/session-input.ts";
import { Memory } from "../src/memory.ts";
import { createModels } from "../src/models/profiles.ts";
import type { Models } from "../src/models/provider.ts";
import { openPostgresStore } from "../src/store/open-store.ts";
import type { ScopeStats } from "../src/store/records.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import { type CorpusImage, generateQueries, generateSessions, makeImagePool } from "./perf/corpus.ts";
import { Random } from "./perf/random.ts";
import { percentile } from "./perf/stats.ts";

const { values } = parseArgs({
  options: {
    profile: { type: "string", default: "hash" },
    seconds: { type: "string", default: "60" },
    clients: { type: "string", default: "16" },
    preload: { type: "string", default: "10000" },
    "add-share": { type: "string", default: "0.2" },
    out: { type: "string", default: "bench/results" },
    "skip-postgres": { type: "boolean", default: false },
    /** Open loop: operations arriving per second (unset: closed loop over --clients). */
    rate: { type: "string" },
    /** Comma-separated read-pool sizes, one HTTP phase each (unset: the server's default). */
    "read-workers": { type: "string" },
  },
});
const config = {
  profile: values.profile,
  seconds: positive(values.seconds, "--seconds"),
  clients: positive(values.clients, "--clients"),
  preloadRawNodes: positive(values.preload, "--preload"),
  addShare: Number(values["add-share"]),
  /** Arrivals per second in open-loop mode; null for the closed loop. */
  rate: values.rate === undefined ? null : positive(values.rate, "--rate"),
  /** `cairn serve --read-workers` per HTTP phase; null: one phase with the server's default. */
  readWorkers: values["read-workers"] === undefined ? [null] : values["read-workers"].split(",").map(workerCount),
};
if (!(config.addShare >= 0 && config.addShare <= 1)) fail("--add-share must be between 0 and 1");
const out = resolve(values.out);
const root = resolve(fileURLToPath(import.meta.url), "../..");
const scope: Scope = { tenant: "load", user: "ana" };

type Operation = "add" | "search";
interface Sample {
  readonly operation: Operation;
  readonly ms: number;
  readonly ok: boolean;
}
interface OperationStats {
  readonly count: number;
  readonly errors: number;
  readonly perSecond: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
}
interface PhaseResult {
  readonly seconds: number;
  readonly total: { readonly count: number; readonly errors: number; readonly perSecond: number };
  readonly operations: Record<Operation, OperationStats>;
  readonly firstErrors: readonly string[];
}

/** The same client loop for both phases; `run` performs one operation and throws on failure. */
async function runPhase(
  name: string,
  run: (operation: Operation, client: number, random: Random) => Promise<void>,
): Promise<PhaseResult> {
  const samples: Sample[] = [];
  const firstErrors: string[] = [];
  const started = performance.now();
  const deadline = started + config.seconds * 1000;
  const bar = new cliProgress.SingleBar(
    { format: `${name.padEnd(10)} {bar} {value}/{total} s | {ops} ops | {errors} errors`, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  bar.start(config.seconds, 0, { ops: 0, errors: 0 });
  const ticker = setInterval(() => {
    bar.update(Math.min(config.seconds, Math.round((performance.now() - started) / 1000)), {
      ops: samples.length,
      errors: samples.filter((sample) => !sample.ok).length,
    });
  }, 500);
  const record = async (operation: Operation, from: number, work: Promise<void>) => {
    let ok = true;
    try {
      await work;
    } catch (error) {
      ok = false;
      if (firstErrors.length < 5) firstErrors.push(`${operation}: ${(error as Error).message}`);
    }
    samples.push({ operation, ms: performance.now() - from, ok });
  };
  if (config.rate !== null) {
    // Open loop: the next arrival is scheduled from the last scheduled one, never from an answer.
    const random = new Random(1000);
    const inFlight: Promise<void>[] = [];
    let arrival = started;
    for (let index = 0; arrival < deadline; index++) {
      const wait = arrival - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const operation: Operation = random.chance(config.addShare) ? "add" : "search";
      inFlight.push(record(operation, arrival, run(operation, index % config.clients, random)));
      arrival += (-Math.log(1 - random.next()) * 1000) / config.rate;
    }
    await Promise.all(inFlight);
  } else
    await Promise.all(
      Array.from({ length: config.clients }, async (_, client) => {
        const random = new Random(1000 + client);
        while (performance.now() < deadline) {
          const operation: Operation = random.chance(config.addShare) ? "add" : "search";
          await record(operation, performance.now(), run(operation, client, random));
        }
      }),
    );
  clearInterval(ticker);
  const seconds = (performance.now() - started) / 1000;
  bar.update(config.seconds, { ops: samples.length, errors: samples.filter((sample) => !sample.ok).length });
  bar.stop();
  const stats = (operation: Operation): OperationStats => {
    const own = samples.filter((sample) => sample.operation === operation);
    const times = own.filter((sample) => sample.ok).map((sample) => sample.ms);
    return {
      count: own.length,
      errors: own.length - times.length,
      perSecond: own.length / seconds,
      p50: percentile(times, 50),
      p95: percentile(times, 95),
      p99: percentile(times, 99),
      max: times.length ? Math.max(...times) : Number.NaN,
    };
  };
  const errors = samples.filter((sample) => !sample.ok).length;
  return {
    seconds,
    total: { count: samples.length, errors, perSecond: samples.length / seconds },
    operations: { add: stats("add"), search: stats("search") },
    firstErrors,
  };
}

/** p50/p99 of searches run one at a time (no concurrency), after the same warm-up. */
async function sequentialSearches(
  queries: readonly string[],
  search: (query: string) => Promise<unknown>,
): Promise<{ searches: number; p50: number; p99: number }> {
  const times: number[] = [];
  for (const query of queries.slice(50, 250)) {
    const begin = performance.now();
    await search(query);
    times.push(performance.now() - begin);
  }
  return { searches: times.length, p50: percentile(times, 50), p99: percentile(times, 99) };
}

/** New sessions for the add operations: 4-8 turns, some with an image, keys unique per phase. */
function sessionSource(images: readonly CorpusImage[], phase: string) {
  const sessions = generateSessions({ rawNodes: 1_000_000, seed: 99, turnsPerSession: 6, imageShare: 0.1 }, images);
  let next = 0;
  return (): SessionInput => {
    const session = sessions.next().value as SessionInput;
    return { ...session, session: `${phase}-${next++}` };
  };
}

function toJsonSession(session: SessionInput) {
  return {
    ...session,
    turns: session.turns.map((turn) => ({
      ...turn,
      images: turn.images?.map((image) =>
        "data" in image && image.data instanceof Uint8Array
          ? { data: Buffer.from(image.data).toString("base64"), caption: image.caption }
          : image,
      ),
    })),
  };
}

async function startChildServer(
  db: string,
  extraArgs: readonly string[] = [],
): Promise<{ url: string; child: ChildProcess; exited: Promise<number>; readWorkers: number | null }> {
  const child = spawn(
    process.execPath,
    [join(root, "bin/cairn.js"), "serve", "--db", db, "--port", "0", "--profile", config.profile, ...extraArgs],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise<number>((done) => child.once("exit", (code) => done(code ?? -1)));
  let output = "";
  const url = await new Promise<string>((done, reject) => {
    child.stdout?.on("data", (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) done(match[1] as string);
    });
    exited.then((code) => reject(new Error(`cairn serve exited with ${code}:\n${output}`)));
  });
  const workers = /(\d+) read worker/.exec(output);
  return { url, child, exited, readWorkers: workers ? Number(workers[1]) : null };
}

/** One HTTP phase: the server's read-pool size (null on Postgres) and what it measured. */
interface HttpRun {
  readonly readWorkers: number | null;
  readonly alone: { searches: number; p50: number; p99: number };
  readonly phase: PhaseResult;
}

interface PostgresPhase {
  readonly server: string;
  readonly instances: number;
  readonly preloadSeconds: number;
  /** One search at a time through the first instance, no other load. */
  readonly alone: { searches: number; p50: number; p99: number };
  readonly phase: PhaseResult;
  /** Adds acknowledged (201) during the phase, and what the database holds afterwards: sessions must be preload + acknowledged. */
  readonly acknowledgedAdds: number;
  readonly storedAfter: ScopeStats;
  readonly lostSessions: number;
  /** What each instance answered the key once it was revoked in the database (401 expected from both). */
  readonly statusAfterRevoke: readonly number[];
  readonly serverExitCodes: readonly number[];
}

/**
 * Two `cairn serve` instances on one Postgres database, the clients spread over both, with API-key
 * auth on as deployed: one key made in the database (`api_keys`, as `cairn keys create --db
 * postgres://…` makes it) opens both instances. After the phase the key is revoked there and both
 * instances must refuse it (401): one revocation closes every instance.
 */
async function postgresPhase(
  models: Models,
  images: readonly CorpusImage[],
  preload: readonly SessionInput[],
  queries: readonly string[],
): Promise<PostgresPhase> {
  let postgres: BenchPostgres | undefined;
  const servers: Awaited<ReturnType<typeof startChildServer>>[] = [];
  try {
    postgres = await openBenchPostgres();
    const url = await postgres.freshDatabase();
    const store = await openPostgresStore({ url });
    const memory = await Memory.open({ store, models });
    const loading = new cliProgress.SingleBar(
      { format: "pg preload {bar} {value}/{total} sessions", hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    const preloadStarted = performance.now();
    loading.start(preload.length, 0);
    try {
      for (const session of preload) {
        await memory.addSession(scope, session);
        loading.increment();
      }
    } finally {
      loading.stop();
      await memory.close();
    }
    const preloadSeconds = (performance.now() - preloadStarted) / 1000;
    const keys = await openKeyStore(url);
    let created: Awaited<ReturnType<typeof keys.create>>;
    try {
      created = await keys.create({ tenant: scope.tenant, user: scope.user });
    } finally {
      await keys.close();
    }
    for (let instance = 0; instance < 2; instance++) servers.push(await startChildServer(url));
    const headers = { authorization: `Bearer ${created.key}`, "content-type": "application/json" };
    let acknowledgedAdds = 0;
    const post = async (instance: number, path: string, body: unknown) => {
      const server = servers[instance % servers.length] as (typeof servers)[number];
      const response = await fetch(`${server.url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
      const text = await response.text();
      if (!response.ok)
        throw new Error(
          `${path} on instance ${instance % servers.length} answered ${response.status}: ${text.slice(0, 200)}`,
        );
      if (path === "/v1/sessions") acknowledgedAdds++;
    };
    for (const [index, query] of queries.slice(0, 50).entries()) await post(index, "/v1/search", { text: query });
    const alone = await sequentialSearches(queries, (query) => post(0, "/v1/search", { text: query }));
    const sessions = sessionSource(images, "pg");
    const phase = await runPhase("2× serve pg", async (operation, client, random) => {
      if (operation === "add") await post(client, "/v1/sessions", toJsonSession(sessions()));
      else await post(client, "/v1/search", { text: random.pick(queries) });
    });
    const revoking = await openKeyStore(url);
    try {
      await revoking.revoke(created.record.id);
    } finally {
      await revoking.close();
    }
    const afterRevoke = await Promise.all(
      servers.map(
        async (server) =>
          (await fetch(`${server.url}/v1/search`, { method: "POST", headers, body: JSON.stringify({ text: "x" }) }))
            .status,
      ),
    );
    for (const server of servers) server.child.kill("SIGTERM");
    const serverExitCodes = await Promise.all(servers.map((server) => server.exited));
    servers.length = 0;
    const check = await Memory.open({ store: await openPostgresStore({ url }), models });
    const storedAfter = await check.stats(scope);
    await check.close();
    return {
      server: postgres.description,
      instances: 2,
      preloadSeconds,
      alone,
      phase,
      acknowledgedAdds,
      storedAfter,
      lostSessions: preload.length + acknowledgedAdds - storedAfter.sessions,
      statusAfterRevoke: afterRevoke,
      serverExitCodes,
    };
  } finally {
    for (const server of servers) server.child.kill("SIGTERM");
    await Promise.all(servers.map((server) => server.exited));
    await postgres?.close();
  }
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0];
  const dir = mkdtempSync(join(os.tmpdir(), "cairn-load-"));
  try {
    const images = await makeImagePool(48);
    const queries = generateQueries(500, 4321);
    const models = await createModels(config.profile);
    // The store is opened here so the bench can wait on its ANN index builds.
    const store = await SqliteStore.open({ path: dir });
    let memory = await Memory.open({ store, models });

    const preload = [...generateSessions({ rawNodes: config.preloadRawNodes, imageShare: 0.05 }, images)];
    const loading = new cliProgress.SingleBar(
      { format: "preload    {bar} {value}/{total} sessions", hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    loading.start(preload.length, 0);
    for (const session of preload) {
      await memory.addSession(scope, session);
      loading.increment();
    }
    loading.stop();
    // Warm caches and wait for the ANN indexes (built in a worker) before timing anything.
    for (const query of queries.slice(0, 50)) await memory.search(scope, query);
    for (const space of [memory.spaces.text.name, memory.spaces.imageText.name]) {
      await store.vectorIndexes.ready(space, scope);
    }
    const inProcessAlone = await sequentialSearches(queries, (query) => memory.search(scope, query));

    const inProcessSessions = sessionSource(images, "inproc");
    const inProcess = await runPhase("in-process", async (operation, _client, random) => {
      // Memory itself lets one writer of a scope plan and commit at a time, in-process as behind the service.
      if (operation === "add") await memory.addSession(scope, inProcessSessions());
      else await memory.search(scope, random.pick(queries));
    });
    await memory.close();

    const keys = await openKeyStore(dir);
    const { key } = await keys.create({ tenant: scope.tenant, user: scope.user });
    await keys.close();
    const httpRuns: HttpRun[] = [];
    let serverExit = 0;
    for (const readWorkers of config.readWorkers) {
      const server = await startChildServer(dir, readWorkers === null ? [] : ["--read-workers", String(readWorkers)]);
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
      const post = async (path: string, body: unknown) => {
        const response = await fetch(`${server.url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
        const text = await response.text();
        if (!response.ok) throw new Error(`${path} answered ${response.status}: ${text.slice(0, 200)}`);
      };
      for (const query of queries.slice(0, 50)) await post("/v1/search", { text: query });
      const alone = await sequentialSearches(queries, (query) => post("/v1/search", { text: query }));
      const httpSessions = sessionSource(images, `http-${httpRuns.length}`);
      const phase = await runPhase(`http rw=${readWorkers ?? "default"}`, async (operation, _client, random) => {
        if (operation === "add") await post("/v1/sessions", toJsonSession(httpSessions()));
        else await post("/v1/search", { text: random.pick(queries) });
      });
      server.child.kill("SIGTERM");
      serverExit ||= await server.exited;
      httpRuns.push({ readWorkers: server.readWorkers, alone, phase });
    }
    const { alone: httpAlone, phase: http } = httpRuns.at(-1) as HttpRun;
    let postgres: PostgresPhase | { readonly skipped: string };
    if (values["skip-postgres"]) postgres = { skipped: "--skip-postgres" };
    else {
      try {
        postgres = await postgresPhase(models, images, preload, queries);
      } catch (error) {
        postgres = { skipped: `no Postgres phase: ${(error as Error).message}` };
      }
    }
    await models.close();

    memory = await Memory.open({ path: dir, models: await createModels("hash") });
    const stored = await memory.stats(scope).catch(() => null);
    await memory.close();

    const ratio = http.operations.search.p99 / inProcess.operations.search.p99;
    const postgresMet =
      "skipped" in postgres ||
      (postgres.phase.total.errors === 0 &&
        postgres.lostSessions === 0 &&
        postgres.statusAfterRevoke.every((status) => status === 401));
    const result = {
      command: `npm run bench:load${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
      date: new Date().toISOString(),
      machine: {
        cpu: os.cpus()[0]?.model ?? "unknown",
        cores: os.cpus().length,
        node: process.version,
        os: `${os.type()} ${os.release()}`,
      },
      config,
      /** 1-minute load average before and after: other work on the machine skews every figure. */
      loadAverage: { before: loadBefore, after: os.loadavg()[0] },
      preloaded: { sessions: preload.length, rawNodes: config.preloadRawNodes },
      /** One search at a time, no other load: the per-request cost of HTTP itself. */
      alone: { inProcess: inProcessAlone, http: httpAlone },
      inProcess,
      http,
      /** Every HTTP phase, one per read-pool size (`http` is the last). */
      httpRuns,
      searchP99Ratio: ratio,
      /** Two `cairn serve` instances on one Postgres database (or why the phase did not run). */
      postgres,
      target: {
        description: "HTTP search p99 within 2x of in-process search p99 at the same load, zero errors",
        met: ratio <= 2 && http.total.errors === 0 && inProcess.total.errors === 0,
      },
      postgresTarget: {
        description:
          "two cairn serve instances on one Postgres database with API keys from it: zero errors, no acknowledged session missing, a revoked key refused by both",
        met: "skipped" in postgres ? null : postgresMet,
      },
      serverExitCode: serverExit,
      storedAfter: stored,
    };
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, "load.json"), `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(join(out, "load.md"), renderMarkdown(result));
    console.log(renderMarkdown(result));
    if (!result.target.met || !postgresMet) process.exitCode = 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function renderMarkdown(result: {
  command: string;
  date: string;
  machine: { cpu: string; cores: number; node: string; os: string };
  config: typeof config;
  preloaded: { sessions: number; rawNodes: number };
  loadAverage: { before: number | undefined; after: number | undefined };
  alone: Record<"inProcess" | "http", { searches: number; p50: number; p99: number }>;
  inProcess: PhaseResult;
  http: PhaseResult;
  httpRuns: readonly HttpRun[];
  searchP99Ratio: number;
  target: { description: string; met: boolean };
  postgres: PostgresPhase | { readonly skipped: string };
  postgresTarget: { description: string; met: boolean | null };
}): string {
  const ms = (value: number) => (Number.isNaN(value) ? "—" : value < 10 ? value.toFixed(2) : value.toFixed(1));
  const phases = [
    { name: "in-process", phase: result.inProcess },
    ...result.httpRuns.map((run) => ({
      name: run.readWorkers === null ? "HTTP" : `HTTP, ${run.readWorkers} read worker(s)`,
      phase: run.phase,
    })),
  ];
  const rows = phases.flatMap(({ name, phase }) =>
    (["search", "add"] as const).map((operation) => {
      const stats = phase.operations[operation];
      return `| ${name} | ${operation} | ${stats.count.toLocaleString("en-US")} | ${stats.perSecond.toFixed(1)} | ${ms(stats.p50)} | ${ms(stats.p95)} | ${ms(stats.p99)} | ${ms(stats.max)} | ${stats.errors} |`;
    }),
  );
  const ratios = result.httpRuns.map(
    (run) =>
      `${run.readWorkers === null ? "HTTP" : `${run.readWorkers} read worker(s)`} ${(run.phase.operations.search.p99 / result.inProcess.operations.search.p99).toFixed(2)}`,
  );
  const postgres = result.postgres;
  const postgresRows =
    "skipped" in postgres
      ? []
      : (["search", "add"] as const).map((operation) => {
          const stats = postgres.phase.operations[operation];
          return `| 2× serve on Postgres | ${operation} | ${stats.count.toLocaleString("en-US")} | ${stats.perSecond.toFixed(1)} | ${ms(stats.p50)} | ${ms(stats.p95)} | ${ms(stats.p99)} | ${ms(stats.max)} | ${stats.errors} |`;
        });
  const postgresLines =
    "skipped" in postgres
      ? ["", `Postgres phase skipped: ${postgres.skipped}.`]
      : [
          "",
          `Postgres phase: ${postgres.instances} \`cairn serve --db postgres://…\` instances on one database (${postgres.server}), ` +
            `the same ${result.preloaded.rawNodes.toLocaleString("en-US")} raw nodes pre-loaded in ${postgres.preloadSeconds.toFixed(0)} s, client i → instance i mod 2, ` +
            `API-key auth on: one key made in the database opens both (revoked there afterwards, the instances answered ${postgres.statusAfterRevoke.join(" and ")}). ` +
            `One search at a time through one instance: p50 ${ms(postgres.alone.p50)} ms / p99 ${ms(postgres.alone.p99)} ms. ` +
            `Throughput ${postgres.phase.total.perSecond.toFixed(1)} ops/s. Adds acknowledged ${postgres.acknowledgedAdds}; sessions stored afterwards ${postgres.storedAfter.sessions} ` +
            `(preload + acknowledged − stored = ${postgres.lostSessions} missing).`,
          "",
          `Postgres target (${result.postgresTarget.description}): **${result.postgresTarget.met ? "met" : "NOT met"}**.`,
        ];
  const errors = [
    ...result.inProcess.firstErrors,
    ...result.httpRuns.flatMap((run) => run.phase.firstErrors),
    ...("skipped" in postgres ? [] : postgres.phase.firstErrors),
  ];
  return [
    "# Cairn service load test",
    "",
    "Regenerated by `bench/load.ts`.",
    "",
    `- command: \`${result.command}\``,
    `- machine: ${result.machine.cpu}, ${result.machine.cores} cores, ${result.machine.os}; node ${result.machine.node}`,
    `- date: ${result.date}; 1-minute load average ${result.loadAverage.before?.toFixed(1)} before, ${result.loadAverage.after?.toFixed(1)} after (other work on the machine skews the figures)`,
    `- profile ${result.config.profile}; ${result.preloaded.rawNodes.toLocaleString("en-US")} raw nodes pre-loaded in one scope; ` +
      (result.config.rate === null
        ? `${result.config.clients} concurrent clients (closed loop) for ${result.config.seconds} s per phase; `
        : `open loop: ${result.config.rate} operations/s arriving (exponential gaps), latency counted from each arrival, for ${result.config.seconds} s per phase; `) +
      `${Math.round(result.config.addShare * 100)}% adds (6±4-turn sessions, 10% of turns with an image), the rest text searches`,
    "- in-process: the clients call `Memory` directly in one process. HTTP: a `cairn serve` child process with API-key auth, " +
      "clients over `fetch` on loopback from the bench process (both share the same cores).",
    "",
    "| phase | operation | count | ops/s | p50 ms | p95 ms | p99 ms | max ms | errors |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...rows,
    ...postgresRows,
    "",
    `One search at a time, no other load (${result.alone.http.searches} searches): in-process p50 ${ms(result.alone.inProcess.p50)} ms / p99 ${ms(result.alone.inProcess.p99)} ms, ` +
      result.httpRuns
        .map(
          (run) =>
            `${run.readWorkers === null ? "HTTP" : `HTTP with ${run.readWorkers} read worker(s)`} p50 ${ms(run.alone.p50)} ms / p99 ${ms(run.alone.p99)} ms`,
        )
        .join(", ") +
      ".",
    "",
    `Throughput: in-process ${result.inProcess.total.perSecond.toFixed(1)} ops/s, ${phases
      .slice(1)
      .map(({ name, phase }) => `${name} ${phase.total.perSecond.toFixed(1)} ops/s`)
      .join(", ")}.`,
    "",
    `Search p99 HTTP ÷ in-process: ${ratios.join("; ")}. Target (${result.target.description}), last HTTP phase: **${result.searchP99Ratio.toFixed(2)}**, **${result.target.met ? "met" : "NOT met"}**.`,
    ...postgresLines,
    ...(errors.length ? ["", "First errors:", ...errors.map((error) => `- ${error}`)] : []),
    "",
  ].join("\n");
}

function workerCount(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) fail("--read-workers takes whole numbers, comma-separated (0 = off)");
  return number;
}

function positive(value: string, flag: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0) fail(`${flag} must be a positive integer`);
  return number;
}

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

await main();
