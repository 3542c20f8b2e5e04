import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { promisify } from "node:util";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { startServer } from "../../src/surfaces/http/server.ts";
import { tempDir } from "../support/fixtures.ts";

/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance) against `/mcp` of a real
 * `cairn serve --no-auth` on loopback. It needs Node 22 (`fs.globSync`), so it lives with its own
 * Node 22 binary (the `node` npm package) in `.ci/conformance/`, installed by `.ci/run`.
 */
const toolDir = join(import.meta.dirname, "../../.ci/conformance");
const node22 = join(toolDir, "node_modules/.bin/node");
const suite = join(toolDir, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const installed = existsSync(node22) && existsSync(suite);

/** Scenarios that test what Cairn does: every check must pass. */
const applicable = [
  "server-initialize",
  "ping",
  "logging-set-level",
  "tools-list",
  "resources-list",
  "prompts-list",
  "dns-rebinding-protection",
];

const fixtureTool = "calls a fixture tool of the suite's reference server that Cairn does not have";
/** Scenarios that do not apply to Cairn, each with the reason. */
const notApplicable: Record<string, string> = {
  "tools-call-simple-text": `${fixtureTool} (test_simple_text); it reports SUCCESS only because an unknown tool answers with an error result`,
  "tools-call-error": `${fixtureTool} (test_error_handling); it reports SUCCESS only because an unknown tool answers with an error result`,
  "tools-call-image": `${fixtureTool} (test_image_content)`,
  "tools-call-audio": `${fixtureTool} (test_audio_content)`,
  "tools-call-embedded-resource": `${fixtureTool} (test_embedded_resource)`,
  "tools-call-mixed-content": `${fixtureTool} (test_multiple_content_types)`,
  "tools-call-with-logging": `${fixtureTool} (test_tool_with_logging)`,
  "tools-call-with-progress": `${fixtureTool} (test_tool_with_progress)`,
  "tools-call-sampling": `${fixtureTool} (test_sampling); Cairn asks no model of the client`,
  "tools-call-elicitation": `${fixtureTool} (test_elicitation); Cairn asks the user nothing`,
  "elicitation-sep1034-defaults": `${fixtureTool} (test_elicitation_sep1034_defaults)`,
  "elicitation-sep1330-enums": `${fixtureTool} (test_elicitation_sep1330_enums)`,
  "completion-complete":
    "completes an argument of the fixture prompt test_prompt_with_arguments; Cairn offers no completions",
  "resources-read-text": "reads the fixture resource test://static-text",
  "resources-read-binary": "reads the fixture resource test://static-binary",
  "resources-templates-read": "reads the fixture template test://template/{id}/data",
  "resources-subscribe":
    "subscribes to the fixture resource test://watched-resource; Cairn's /mcp is stateless (no session, no stream to push resources/updated on), so it declares no subscriptions",
  "resources-unsubscribe": "unsubscribes from the fixture resource test://watched-resource (see resources-subscribe)",
  "prompts-get-simple": "gets the fixture prompt test_simple_prompt",
  "prompts-get-with-args": "gets the fixture prompt test_prompt_with_arguments",
  "prompts-get-embedded-resource": "gets the fixture prompt test_prompt_with_embedded_resource",
  "prompts-get-with-image": "gets the fixture prompt test_prompt_with_image",
  "server-sse-multiple-streams":
    "needs a session id to open several SSE streams; Cairn's /mcp is stateless JSON (the suite reports a WARNING, not a pass)",
};

type Check = { id: string; status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED"; errorMessage?: string };

describe("the official MCP conformance suite against /mcp", {
  skip: installed ? false : "run `npm ci --prefix .ci/conformance` (.ci/run does)",
}, () => {
  it("passes every scenario that applies; the rest are listed with a reason", { timeout: 180_000 }, async (t) => {
    const dir = tempDir(t);
    const memory = await Memory.open({ path: join(dir, "store"), models: createHashModels(), ownsModels: true });
    const server = await startServer({ memory, keys: null, host: "127.0.0.1", port: 0 });
    t.after(() => server.close());
    const output = join(dir, "results");
    await promisify(execFile)(node22, [suite, "server", "--url", `${server.url}/mcp`, "-o", output], {
      timeout: 150_000,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { code?: number; stdout?: string }) => {
      // The suite exits non-zero when any scenario fails, and the fixture scenarios do: read the results.
      if (typeof error.code !== "number") throw error;
    });

    const results = new Map<string, Check[]>();
    for (const entry of readdirSync(output)) {
      const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
      assert.ok(scenario, `unexpected result folder ${entry}`);
      results.set(scenario, JSON.parse(readFileSync(join(output, entry, "checks.json"), "utf8")) as Check[]);
    }
    const unclassified = [...results.keys()].filter((name) => !applicable.includes(name) && !(name in notApplicable));
    assert.deepEqual(unclassified, [], "a scenario the suite ran is neither applicable nor listed with a reason");

    for (const scenario of applicable) {
      const checks = results.get(scenario);
      assert.ok(checks && checks.length > 0, `${scenario} ran`);
      const failed = checks.filter((check) => check.status !== "SUCCESS" && check.status !== "INFO");
      assert.deepEqual(failed, [], `${scenario}: ${JSON.stringify(failed)}`);
      t.diagnostic(`pass ${scenario} (${checks.length} check(s))`);
    }
    for (const [scenario, reason] of Object.entries(notApplicable)) {
      const statuses = results.get(scenario)?.map((check) => check.status) ?? ["not run"];
      t.diagnostic(`n/a ${scenario} [${statuses.join(",")}]: ${reason}`);
    }
    const rebinding = results.get("dns-rebinding-protection") ?? [];
    assert.deepEqual(rebinding.map((check) => check.id).sort(), [
      "localhost-host-rebinding-rejected",
      "localhost-host-valid-accepted",
    ]);
  });
});
