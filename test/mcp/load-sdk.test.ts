import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ConfigError } from "../../src/core/errors.ts";
import { loadMcpModule, mcpSdkVersion } from "../../src/surfaces/mcp/load-sdk.ts";

/** What Node raises when an ESM import cannot find a package. */
function notFound(name: string): Error {
  return Object.assign(new Error(`Cannot find package '${name}' imported from /app/dist/surfaces/mcp/stdio.js`), {
    code: "ERR_MODULE_NOT_FOUND",
  });
}

describe("the optional MCP SDK", () => {
  it("loads an SDK-backed module when the SDK is installed", async () => {
    const { serveStdio } = await loadMcpModule(() => import("../../src/surfaces/mcp/stdio.ts"));
    assert.equal(typeof serveStdio, "function");
  });

  it("turns a missing SDK into a ConfigError naming the install, and lets any other failure through", async () => {
    await assert.rejects(
      loadMcpModule(() => Promise.reject(notFound("@modelcontextprotocol/sdk"))),
      (error) =>
        error instanceof ConfigError &&
        error.message.includes(`npm install @modelcontextprotocol/sdk@${mcpSdkVersion}`),
    );
    // Something the SDK itself needs is a broken install, not a missing optional SDK.
    const broken = notFound("zod");
    await assert.rejects(
      loadMcpModule(() => Promise.reject(broken)),
      (error) => error === broken,
    );
  });

  it("names the version the repository is built with", () => {
    const manifest = join(import.meta.dirname, "../../node_modules/@modelcontextprotocol/sdk/package.json");
    assert.equal(mcpSdkVersion, (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version);
  });
});
