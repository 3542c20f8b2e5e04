import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { cairnEntry } from "../support/compiled.ts";
import { tempDir } from "../support/fixtures.ts";
import { inspector, kayakSession, toolNames } from "./support.ts";

/** The CLI's entry: bin/cairn.js's module, compiled once for the run (test/support/compiled.ts). */
const bin = cairnEntry();

/** The MCP Inspector CLI as an outside client of `cairn mcp`. */
function inspect(db: string, args: string[]) {
  return inspector([process.execPath, bin, "mcp", "--db", db, "--profile", "hash", "--tenant", "default"], args);
}

describe("cairn mcp with the MCP Inspector CLI", () => {
  it("lists the tools, stores a session, and searches it with the image in the answer", async (t) => {
    const db = join(tempDir(t), "store");
    const listed = (await inspect(db, ["--method", "tools/list"])) as { tools: { name: string }[] };
    assert.deepEqual(listed.tools.map((tool) => tool.name).sort(), toolNames);

    const { session, data } = await kayakSession();
    const added = (await inspect(db, [
      "--method",
      "tools/call",
      "--tool-name",
      "cairn_add_session",
      "--tool-arg",
      `session=${JSON.stringify(session)}`,
    ])) as { isError?: boolean; structuredContent: { rawNodeIds: string[] } };
    assert.notEqual(added.isError, true, JSON.stringify(added));
    assert.equal(added.structuredContent.rawNodeIds.length, 2);

    const found = (await inspect(db, [
      "--method",
      "tools/call",
      "--tool-name",
      "cairn_search",
      "--tool-arg",
      "text=kayak",
      'budget={"rawNodes":2,"images":1}',
      "images=original",
    ])) as {
      content: { type: string; text?: string; data?: string; mimeType?: string }[];
      structuredContent: { items: { provenance: { sessionKey: string; turn: number } }[] };
    };
    assert.equal(found.structuredContent.items.length, 2, "both turns, within the budget");
    assert.deepEqual(
      found.structuredContent.items.map((item) => item.provenance.sessionKey),
      ["s1", "s1"],
    );
    const image = found.content.find((block) => block.type === "image");
    assert.deepEqual(image, { type: "image", data, mimeType: "image/png" });
  });
});
