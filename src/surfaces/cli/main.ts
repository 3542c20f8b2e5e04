import { type ParseArgsConfig, parseArgs } from "node:util";
import { CairnError } from "../../core/errors.ts";
import { type CommonOptions, commonOptionSpec, commonOptions, requireTenant, scopeOptionSpec } from "./context.ts";

type Flags = NonNullable<ParseArgsConfig["options"]>;
type Values = Record<string, string | boolean | string[] | undefined>;

/** What a command needs of the scope flags: none, one scope (tenant required), or one scope if given. */
type ScopeUse = "none" | "required" | "optional";

/**
 * One CLI command: its help, the flags it takes (besides the common ones) and how many positionals.
 * Each command parses only its own flags, so a flag another command takes (`cairn search --port 1`)
 * is an unknown-flag error (exit 2) rather than something silently ignored.
 *
 * A command's module is imported only when that command runs or shows its help, so `cairn --help`
 * and a mistyped command load none of the engine (the whole of it takes seconds to import). `cairn
 * --help` lists each command by `summary`, the first line of its help (test/cli/strictness.test.ts
 * checks the two agree).
 */
interface CliCommand {
  readonly summary: string;
  help(): Promise<string>;
  readonly scope: ScopeUse;
  readonly flags: Flags;
  /** The most positionals it takes; more are a usage error. */
  readonly positionals: number;
  run(options: CommonOptions, values: Values, positionals: string[], argv: readonly string[]): Promise<number>;
}

/** A command whose module `load` imports on first use; `help` and `run` receive that module. */
interface LazyCommand<M> extends Omit<CliCommand, "help" | "run"> {
  load(): Promise<M>;
  help(module: M): string;
  run(
    module: M,
    options: CommonOptions,
    values: Values,
    positionals: string[],
    argv: readonly string[],
  ): Promise<number>;
}

function lazy<M>(command: LazyCommand<M>): CliCommand {
  const { load, help, run, ...rest } = command;
  return {
    ...rest,
    help: async () => help(await load()),
    run: async (...args) => run(await load(), ...args),
  };
}

const demoHelp = "cairn demo   build the example memory from examples/ (tenant demo, user ana) and run a few searches";

const remoteImages: Flags = { "allow-remote-images": { type: "boolean", default: false } };

const commands: Record<string, CliCommand> = {
  ingest: lazy({
    summary: "cairn ingest <file.jsonl> [--user U] [--tenant T]",
    load: () => import("./commands/ingest.ts"),
    help: (module) => module.ingestHelp,
    scope: "required",
    flags: remoteImages,
    positionals: 1,
    run: (module, options, _values, positionals) => module.ingest(options, positionals[0]),
  }),
  append: lazy({
    summary: 'cairn append --session KEY (<turns.jsonl> | --text "<words>" [--speaker NAME]) [--part KEY]',
    load: () => import("./commands/append.ts"),
    help: (module) => module.appendHelp,
    scope: "required",
    flags: {
      session: { type: "string" },
      text: { type: "string" },
      speaker: { type: "string" },
      part: { type: "string" },
      time: { type: "string" },
    },
    positionals: 1,
    run: (module, options, values, positionals) =>
      module.appendCommand(options, positionals[0], {
        session: values.session as string | undefined,
        text: values.text as string | undefined,
        speaker: values.speaker as string | undefined,
        part: values.part as string | undefined,
        time: values.time as string | undefined,
      }),
  }),
  remember: lazy({
    summary: 'cairn remember "<text>" [--image PATH]... [--caption TEXT] [--conversation ID] [--time RFC3339]',
    load: () => import("./commands/remember.ts"),
    help: (module) => module.rememberHelp,
    scope: "required",
    flags: {
      image: { type: "string", multiple: true },
      caption: { type: "string" },
      conversation: { type: "string" },
      time: { type: "string" },
      speaker: { type: "string" },
    },
    positionals: Number.POSITIVE_INFINITY,
    run: (module, options, values, positionals) =>
      module.rememberCommand(options, positionals.join(" ") || undefined, {
        image: values.image as string[] | undefined,
        caption: values.caption as string | undefined,
        conversation: values.conversation as string | undefined,
        time: values.time as string | undefined,
        speaker: values.speaker as string | undefined,
      }),
  }),
  search: lazy({
    summary: 'cairn search "<text>" [--image PATH] [--user U] [--k N] [--session KEY] [--speaker NAME]',
    load: () => import("./commands/search.ts"),
    help: (module) => module.searchHelp,
    scope: "required",
    flags: {
      image: { type: "string" },
      k: { type: "string" },
      session: { type: "string", multiple: true },
      speaker: { type: "string", multiple: true },
      from: { type: "string" },
      to: { type: "string" },
      "max-images": { type: "string" },
      "max-tokens": { type: "string" },
      "min-score": { type: "string" },
    },
    positionals: Number.POSITIVE_INFINITY,
    run: (module, options, values, positionals) =>
      module.search(options, positionals.join(" ") || undefined, {
        image: values.image as string | undefined,
        k: values.k as string | undefined,
        session: values.session as string[] | undefined,
        speaker: values.speaker as string[] | undefined,
        from: values.from as string | undefined,
        to: values.to as string | undefined,
        maxImages: values["max-images"] as string | undefined,
        maxTokens: values["max-tokens"] as string | undefined,
        minScore: values["min-score"] as string | undefined,
      }),
  }),
  context: lazy({
    summary:
      "cairn context trajectory.jsonl --out DIR [--manager none|discard-all|sliding-window|summarisation|visual-rendering|vera] (default vera)",
    load: () => import("./commands/context.ts"),
    help: (module) => module.contextHelp,
    // A tenant is needed only to keep what the manager drops (the default); --no-evict needs none.
    scope: "optional",
    flags: {
      out: { type: "string" },
      manager: { type: "string" },
      budget: { type: "string" },
      trigger: { type: "string" },
      "keep-recent": { type: "string" },
      scale: { type: "string" },
      "image-tokens": { type: "string" },
      summariser: { type: "string" },
      "no-evict": { type: "boolean" },
    },
    positionals: 1,
    run: (module, options, values, positionals) =>
      module.contextCommand(options, positionals[0], {
        out: values.out as string | undefined,
        manager: values.manager as string | undefined,
        budget: values.budget as string | undefined,
        trigger: values.trigger as string | undefined,
        keepRecent: values["keep-recent"] as string | undefined,
        scale: values.scale as string | undefined,
        imageTokens: values["image-tokens"] as string | undefined,
        summariser: values.summariser as string | undefined,
        noEvict: values["no-evict"] === true,
      }),
  }),
  show: lazy({
    summary: "cairn show <raw-node-id> [--save-images DIR]   original text, images and provenance of one raw node",
    load: () => import("./commands/show.ts"),
    help: (module) => module.showHelp,
    scope: "required",
    flags: { "save-images": { type: "string" } },
    positionals: 1,
    run: (module, options, values, positionals) =>
      module.show(options, positionals[0], values["save-images"] as string | undefined),
  }),
  forget: lazy({
    summary: "cairn forget (--session KEY|ID | --raw-node ID | --all --yes) [--user U]",
    load: () => import("./commands/forget.ts"),
    help: (module) => module.forgetHelp,
    scope: "required",
    flags: {
      session: { type: "string" },
      "raw-node": { type: "string" },
      all: { type: "boolean" },
      yes: { type: "boolean" },
    },
    positionals: 0,
    run: (module, options, values) =>
      module.forget(options, {
        session: values.session as string | undefined,
        rawNode: values["raw-node"] as string | undefined,
        all: values.all as boolean | undefined,
        yes: values.yes as boolean | undefined,
      }),
  }),
  check: lazy({
    summary: "cairn check [--tenant T --user U [--agent A]] [--repair]",
    load: () => import("./commands/check.ts"),
    help: (module) => module.checkHelp,
    scope: "optional",
    flags: { repair: { type: "boolean" } },
    positionals: 0,
    run: (module, options, values, _positionals, argv) =>
      module.check(options, {
        scopeGiven: argv.some((arg) => /^--(tenant|user|agent)(=|$)/.test(arg)),
        repair: values.repair === true,
      }),
  }),
  reembed: lazy({
    summary: "cairn reembed [--tenant T --user U [--agent A]] [--force] [--profile P]",
    load: () => import("./commands/reembed.ts"),
    help: (module) => module.reembedHelp,
    scope: "optional",
    flags: { force: { type: "boolean" } },
    positionals: 0,
    run: (module, options, values, _positionals, argv) =>
      module.reembed(options, {
        scopeGiven: argv.some((arg) => /^--(tenant|user|agent)(=|$)/.test(arg)),
        force: values.force === true,
      }),
  }),
  migrate: lazy({
    summary: "cairn migrate --db SOURCE --to TARGET [--carry-audit-secret]",
    load: () => import("./commands/migrate.ts"),
    help: (module) => module.migrateHelp,
    scope: "none",
    flags: { to: { type: "string" }, "carry-audit-secret": { type: "boolean" } },
    positionals: 0,
    run: (module, options, values) =>
      module.migrate(options, values.to as string | undefined, values["carry-audit-secret"] === true),
  }),
  bench: lazy({
    summary: "cairn bench --dataset locomo|mem-gallery|lcmp|all --method NAME[,NAME]|all [--limit N]",
    load: () => import("./commands/bench.ts"),
    help: (module) => module.benchHelp,
    scope: "none",
    flags: {
      dataset: { type: "string" },
      method: { type: "string" },
      limit: { type: "string" },
      budget: { type: "string" },
      data: { type: "string" },
      out: { type: "string" },
      benchmarks: { type: "string" },
      gate: { type: "string" },
      answer: { type: "boolean" },
      store: { type: "string" },
      ablate: { type: "string" },
    },
    positionals: 0,
    run: (module, options, values, _positionals, argv) => module.bench(options, values, argv),
  }),
  watch: lazy({
    summary: "cairn watch SOURCE [--fps N] [--stream NAME] [--start TIME] [--max-seconds S]",
    load: () => import("./commands/watch.ts"),
    help: (module) => module.watchHelp,
    scope: "required",
    flags: {
      fps: { type: "string" },
      stream: { type: "string" },
      start: { type: "string" },
      "max-seconds": { type: "string" },
    },
    positionals: 1,
    run: (module, options, values, positionals) =>
      module.watch(options, positionals[0], {
        fps: values.fps as string | undefined,
        stream: values.stream as string | undefined,
        start: values.start as string | undefined,
        maxSeconds: values["max-seconds"] as string | undefined,
      }),
  }),
  entities: lazy({
    summary:
      "cairn entities list | name ID NAME | enrol (--name NAME | --entity ID) PHOTO... | merge FROM INTO | split ID OBSERVATION... | facts ID",
    load: () => import("./commands/entities.ts"),
    help: (module) => module.entitiesHelp,
    scope: "required",
    flags: { name: { type: "string" }, entity: { type: "string" } },
    positionals: Number.POSITIVE_INFINITY,
    run: (module, options, values, positionals) =>
      module.entities(options, positionals, {
        name: values.name as string | undefined,
        entity: values.entity as string | undefined,
      }),
  }),
  video: lazy({
    summary:
      "cairn video search QUERY [--level observation|trace|chapter|fact|rule|notification] [--k N] | get ID | frames ID [--save-images DIR]",
    load: () => import("./commands/entities.ts"),
    help: (module) => module.videoHelp,
    scope: "required",
    flags: {
      level: { type: "string" },
      k: { type: "string" },
      "save-images": { type: "string" },
      source: { type: "string" },
      outcome: { type: "string" },
    },
    positionals: Number.POSITIVE_INFINITY,
    run: (module, options, values, positionals) =>
      module.video(options, positionals, {
        level: values.level as string | undefined,
        k: values.k as string | undefined,
        saveImages: values["save-images"] as string | undefined,
        source: values.source as string | undefined,
        outcome: values.outcome as string | undefined,
      }),
  }),
  demo: lazy({
    summary: demoHelp,
    load: () => import("./commands/demo.ts"),
    help: () => demoHelp,
    scope: "none",
    flags: {},
    positionals: 0,
    run: (module, options) => module.demo(options),
  }),
  mcp: lazy({
    summary: "cairn mcp [--tenant T --user U [--agent A]] [--image-folder DIR] [--allow-remote-images]",
    load: () => import("./commands/mcp.ts"),
    help: (module) => module.mcpHelp,
    scope: "required",
    flags: { ...remoteImages, "image-folder": { type: "string" } },
    positionals: 0,
    run: (module, options, values) =>
      module.mcp(options, { imageFolder: values["image-folder"] as string | undefined }),
  }),
  serve: lazy({
    summary: "cairn serve [--host 127.0.0.1] [--port 7700] [--no-auth] [--max-body-mb 32] [--demo] [--read-workers N]",
    load: () => import("./commands/serve.ts"),
    help: (module) => module.serveHelp,
    scope: "none",
    flags: {
      ...remoteImages,
      host: { type: "string" },
      port: { type: "string" },
      "no-auth": { type: "boolean" },
      "allowed-hosts": { type: "string", multiple: true },
      "allowed-origins": { type: "string", multiple: true },
      "cors-origin": { type: "string", multiple: true },
      "image-folder": { type: "string" },
      "max-body-mb": { type: "string" },
      "read-workers": { type: "string" },
      demo: { type: "boolean" },
    },
    positionals: 0,
    run: (module, options, values) =>
      module.serve(options, {
        host: values.host as string | undefined,
        port: values.port as string | undefined,
        noAuth: values["no-auth"] as boolean | undefined,
        maxBodyMb: values["max-body-mb"] as string | undefined,
        readWorkers: values["read-workers"] as string | undefined,
        demo: values.demo as boolean | undefined,
        allowedHosts: values["allowed-hosts"] as string[] | undefined,
        allowedOrigins: values["allowed-origins"] as string[] | undefined,
        corsOrigins: values["cors-origin"] as string[] | undefined,
        imageFolder: values["image-folder"] as string | undefined,
      }),
  }),
  keys: lazy({
    summary: "cairn keys create --tenant T [--user U]   prints a new API key once (stored only as its SHA-256)",
    load: () => import("./commands/keys.ts"),
    help: (module) => module.keysHelp,
    // A key is bound to a tenant the person names on this command line, never one from the environment.
    scope: "optional",
    flags: {},
    positionals: 2,
    run: (module, options, _values, positionals, argv) =>
      module.keys(options, positionals, {
        tenantGiven: argv.some((arg) => arg === "--tenant" || arg.startsWith("--tenant=")),
        userGiven: argv.some((arg) => arg === "--user" || arg.startsWith("--user=")),
      }),
  }),
};

const commonHelp = `Options for every command:
  --db DIR|URL        store folder (default ./.cairn), or postgres://user@host/db   [env CAIRN_DB]
  --json              machine-readable output; errors as {"error":{"code","message","field"?}} on stderr
  --profile NAME      models: local (default, offline), hash (fast, non-semantic), openai (CAIRN_OPENAI_* env)
                      [env CAIRN_PROFILE]
  -h, --help          this command's help`;

const scopeHelp = `Scope (commands that read or write memory):
  --tenant T          required: the flag, env CAIRN_TENANT, or "tenant" in ./cairn.json (or the file CAIRN_CONFIG names)
  --user U            default "default"   [env CAIRN_USER]
  --agent A           optional            [env CAIRN_AGENT]`;

const exitHelp =
  "Exit codes: 0 ok, 2 bad input, 3 not found, 4 conflict, 5 store/model/config failure, 6 check found violations, 7 broken invariant (a bug), 1 unexpected.";

const usage = `cairn — long-term multimodal memory for agents

Commands (cairn <command> --help for one command's flags):
${Object.values(commands)
  .map((command) => `  ${command.summary}`)
  .join("\n")}

${commonHelp}

${scopeHelp}

${exitHelp}`;

async function commandHelp(command: CliCommand): Promise<string> {
  return [
    await command.help(),
    "",
    commonHelp,
    ...(command.scope === "none" ? [] : ["", scopeHelp]),
    "",
    exitHelp,
  ].join("\n");
}

const exitCodes: Record<string, number> = {
  input: 2,
  not_found: 3,
  conflict: 4,
  store: 5,
  provider: 5,
  config: 5,
  invariant: 7,
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h") {
    process.stdout.write(`${usage}\n`);
    return name ? 0 : 2;
  }
  if (name === "help") {
    const topic = rest[0] === undefined ? undefined : commands[rest[0]];
    if (rest[0] !== undefined && !topic) return unknownCommand(rest[0]);
    process.stdout.write(`${topic ? await commandHelp(topic) : usage}\n`);
    return 0;
  }
  if (name.startsWith("-")) {
    process.stderr.write(`cairn: the command comes first, then its flags: cairn <command> ${name} …\n\n${usage}\n`);
    return 2;
  }
  const command = commands[name];
  if (!command) return unknownCommand(name);
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    strict: true,
    options: { ...commonOptionSpec, ...(command.scope === "none" ? {} : scopeOptionSpec), ...command.flags },
  });
  if (values.help) {
    process.stdout.write(`${await commandHelp(command)}\n`);
    return 0;
  }
  if (positionals.length > command.positionals) {
    process.stderr.write(
      `cairn ${name}: unexpected argument ${JSON.stringify(positionals[command.positionals])}\n\n${await command.help()}\n`,
    );
    return 2;
  }
  const options = commonOptions(values);
  // Before anything is opened or read: without a tenant the command has nothing it may touch.
  if (command.scope === "required") requireTenant(options);
  return command.run(options, values as Values, positionals, rest);
}

function unknownCommand(name: string): number {
  process.stderr.write(`cairn: unknown command ${name}\n\n${usage}\n`);
  return 2;
}

/** One place maps errors to exit codes and messages; `--json` gets the error as JSON on stderr. */
function report(error: unknown, json: boolean): number {
  if (CairnError.is(error)) {
    // The shape HTTP answers with and MCP carries in _meta["cairn/error"]: one error object everywhere.
    const body = {
      error: { code: error.code, message: error.message, ...("field" in error ? { field: error.field } : {}) },
    };
    process.stderr.write(json ? `${JSON.stringify(body)}\n` : `cairn: ${error.message}\n`);
    return exitCodes[error.code] ?? 1;
  }
  if (error instanceof TypeError && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS")) {
    // Usage errors share the shape of every other error, so a script reads one format.
    const body = { error: { code: "input", message: error.message } };
    process.stderr.write(json ? `${JSON.stringify(body)}\n` : `cairn: ${error.message} (cairn --help)\n`);
    return 2;
  }
  process.stderr.write(`cairn: unexpected failure: ${(error as Error)?.stack ?? String(error)}\n`);
  return 1;
}

const json = process.argv.includes("--json");
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.exitCode = report(error, json);
  },
);
