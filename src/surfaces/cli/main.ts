import { parseArgs } from "node:util";
import { CairnError } from "../../core/errors.ts";
import { bench, benchHelp } from "./commands/bench.ts";
import { check, checkHelp } from "./commands/check.ts";
import { contextCommand, contextHelp } from "./commands/context.ts";
import { demo } from "./commands/demo.ts";
import { forget, forgetHelp } from "./commands/forget.ts";
import { ingest, ingestHelp } from "./commands/ingest.ts";
import { keys, keysHelp } from "./commands/keys.ts";
import { mcp, mcpHelp } from "./commands/mcp.ts";
import { migrate, migrateHelp } from "./commands/migrate.ts";
import { search, searchHelp } from "./commands/search.ts";
import { serve, serveHelp } from "./commands/serve.ts";
import { show, showHelp } from "./commands/show.ts";
import { commonOptionSpec, commonOptions } from "./context.ts";

const usage = `cairn — long-term multimodal memory for agents

Commands:
  ${ingestHelp.replaceAll("\n", "\n  ")}
  ${searchHelp.replaceAll("\n", "\n  ")}
  ${showHelp}
  ${forgetHelp.replaceAll("\n", "\n  ")}
  ${checkHelp.replaceAll("\n", "\n  ")}
  ${migrateHelp.replaceAll("\n", "\n  ")}
  ${benchHelp.replaceAll("\n", "\n  ")}
  ${contextHelp.replaceAll("\n", "\n  ")}
  ${mcpHelp.replaceAll("\n", "\n  ")}
  ${serveHelp.replaceAll("\n", "\n  ")}
  ${keysHelp.replaceAll("\n", "\n  ")}
  cairn demo   build the example memory from examples/ and run a few searches

Options for every command:
  --db DIR|URL        store folder (default ./.cairn), or postgres://user@host/db
  --json              machine-readable output
  --tenant T --user U [--agent A]   the scope (default tenant "default", user "default")
  --profile NAME      models: local (default, offline), hash (fast, non-semantic), openai (CAIRN_OPENAI_* env)
  --allow-remote-images   let ingest fetch http(s) image URLs

Exit codes: 0 ok, 2 bad input, 3 not found, 4 conflict, 5 store/model/config failure, 6 check found violations, 7 broken invariant (a bug), 1 unexpected.`;

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
  const [command, ...rest] = argv;
  if (!command || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(`${usage}\n`);
    return command ? 0 : 2;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      ...commonOptionSpec,
      image: { type: "string" },
      k: { type: "string" },
      session: { type: "string", multiple: true },
      speaker: { type: "string", multiple: true },
      from: { type: "string" },
      to: { type: "string" },
      "max-images": { type: "string" },
      "max-tokens": { type: "string" },
      "raw-node": { type: "string" },
      all: { type: "boolean" },
      yes: { type: "boolean" },
      "save-images": { type: "string" },
      dataset: { type: "string" },
      method: { type: "string" },
      limit: { type: "string" },
      budget: { type: "string" },
      data: { type: "string" },
      out: { type: "string" },
      benchmarks: { type: "string" },
      answer: { type: "boolean" },
      store: { type: "string" },
      host: { type: "string" },
      port: { type: "string" },
      "no-auth": { type: "boolean" },
      "allowed-hosts": { type: "string", multiple: true },
      "allowed-origins": { type: "string", multiple: true },
      "cors-origin": { type: "string", multiple: true },
      "image-folder": { type: "string" },
      "max-body-mb": { type: "string" },
      demo: { type: "boolean" },
      repair: { type: "boolean" },
      manager: { type: "string" },
      trigger: { type: "string" },
      "keep-recent": { type: "string" },
      scale: { type: "string" },
      "image-tokens": { type: "string" },
      summariser: { type: "string" },
      "no-evict": { type: "boolean" },
    },
  });
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const options = commonOptions(values);
  switch (command) {
    case "ingest":
      return ingest(options, positionals[0]);
    case "search":
      return search(options, positionals.join(" ") || undefined, {
        image: values.image,
        k: values.k,
        session: values.session,
        speaker: values.speaker,
        from: values.from,
        to: values.to,
        maxImages: values["max-images"],
        maxTokens: values["max-tokens"],
      });
    case "show":
      return show(options, positionals[0], values["save-images"]);
    case "forget":
      return forget(options, {
        session: values.session?.[0],
        rawNode: values["raw-node"],
        all: values.all,
        yes: values.yes,
      });
    case "check":
      return check(options, {
        scopeGiven: rest.some((arg) => /^--(tenant|user|agent)(=|$)/.test(arg)),
        repair: values.repair === true,
      });
    case "migrate":
      return migrate(options, values.to);
    case "bench":
      return bench(options, values, argv);
    case "context":
      return contextCommand(options, positionals[0], {
        out: values.out,
        manager: values.manager,
        budget: values.budget,
        trigger: values.trigger,
        keepRecent: values["keep-recent"],
        scale: values.scale,
        imageTokens: values["image-tokens"],
        summariser: values.summariser,
        noEvict: values["no-evict"],
      });
    case "demo":
      return demo(options);
    case "mcp":
      return mcp(options, { imageFolder: values["image-folder"] });
    case "serve":
      return serve(options, {
        host: values.host,
        port: values.port,
        noAuth: values["no-auth"],
        maxBodyMb: values["max-body-mb"],
        demo: values.demo,
        allowedHosts: values["allowed-hosts"],
        allowedOrigins: values["allowed-origins"],
        corsOrigins: values["cors-origin"],
        imageFolder: values["image-folder"],
      });
    case "keys":
      return keys(options, positionals, {
        tenantGiven: rest.some((arg) => arg === "--tenant" || arg.startsWith("--tenant=")),
        userGiven: rest.some((arg) => arg === "--user" || arg.startsWith("--user=")),
      });
    default:
      process.stderr.write(`unknown command ${command}\n\n${usage}\n`);
      return 2;
  }
}

/** One place maps errors to exit codes and messages; `--json` gets the error as JSON on stderr. */
function report(error: unknown, json: boolean): number {
  if (CairnError.is(error)) {
    const body = { error: error.code, message: error.message, ...("field" in error ? { field: error.field } : {}) };
    process.stderr.write(json ? `${JSON.stringify(body)}\n` : `cairn: ${error.message}\n`);
    return exitCodes[error.code] ?? 1;
  }
  if (error instanceof TypeError && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS")) {
    process.stderr.write(`cairn: ${error.message}\n`);
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
