import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { cairnEntry } from "../support/compiled.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";
import { call, callFailing, images, kayakSession, links, texts, toolNames } from "./support.ts";

/** The CLI's entry: bin/cairn.js's module, compiled once for the run (test/support/compiled.ts). */
const bin = cairnEntry();

async function connect(db: string, scope: string[]) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin, "mcp", "--db", db, "--profile", "hash", "--tenant", "default", ...scope],
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const client = new Client({ name: "cairn-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

describe("cairn mcp over stdio with the SDK client", () => {
  it("lists tools, stores a session with an image, finds it with its image, reads resources and forgets", async (t) => {
    const db = join(tempDir(t), "store");
    const { client, stderr } = await connect(db, ["--tenant", "acme", "--user", "ana"]);
    t.after(() => client.close());

    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), toolNames);
    const searchTool = tools.find((tool) => tool.name === "cairn_search");
    assert.ok(searchTool?.inputSchema.properties?.text, "search describes its text argument");
    assert.ok(searchTool?.outputSchema, "search declares its structured output");
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((template) => template.uriTemplate).sort(), [
      "cairn://blobs/{hash}",
      "cairn://raw-nodes/{id}",
      "cairn://thumbnails/{hash}",
    ]);

    const { session, data } = await kayakSession();
    const added = await call(client, "cairn_add_session", { session });
    const stored = added.structuredContent as { rawNodeIds: string[]; duplicate: boolean; sessionKey: string };
    assert.equal(stored.sessionKey, "s1");
    assert.equal(stored.rawNodeIds.length, 2);
    assert.equal(stored.duplicate, false);
    const again = await call(client, "cairn_add_session", { session });
    assert.equal((again.structuredContent as { duplicate: boolean }).duplicate, true);

    // By default: provenance in text, the image as a resource link, a compact pack as structured content.
    const linked = await call(client, "cairn_search", { text: "kayak photo", budget: { rawNodes: 4 } });
    assert.equal(images(linked.content).length, 0, "no pixels unless asked for");
    assert.equal(links(linked.content)[0]?.name, "orange kayak on blue water");
    assert.match(texts(linked.content), /2024-05-08T13:56Z · Ana · session s1 turn 1 · id rn_\w+\nLook at it!/);
    // On request: the original image as image content.
    const found = await call(client, "cairn_search", {
      text: "kayak photo",
      budget: { rawNodes: 4 },
      images: "original",
    });
    const pictures = images(found.content);
    assert.equal(pictures.length, 1);
    assert.equal(pictures[0]?.mimeType, "image/png");
    assert.equal(pictures[0]?.data, data, "the original bytes come back unchanged");
    const text = texts(found.content);
    assert.match(text, /session s1 \(id ses_\w+\), turn 1, 2024-05-08T13:56:00.000Z, Ana/);
    assert.match(text, /caption: orange kayak on blue water/);
    assert.equal(links(found.content).length, 0, "attached images are not linked again");
    const pack = found.structuredContent as {
      items: { rawNodeId: string; images: { hash: string }[]; provenance: { turn: number } }[];
    };
    const withImage = pack.items.find((item) => item.images.length > 0);
    assert.ok(withImage);
    assert.equal(withImage.provenance.turn, 1);
    const hash = withImage.images[0]?.hash as string;

    // Image → image: the same picture as the query finds the turn that holds it.
    const byImage = await call(client, "cairn_search", { image: { data }, channels: ["image"] });
    assert.equal((byImage.structuredContent as typeof pack).items[0]?.rawNodeId, withImage.rawNodeId);

    const thumbnails = await call(client, "cairn_search", { text: "kayak", images: "thumbnail" });
    assert.equal(images(thumbnails.content)[0]?.mimeType, "image/webp");

    const { resources } = await client.listResources();
    assert.deepEqual(resources.map((resource) => resource.uri).sort(), [
      `cairn://blobs/${hash}`,
      ...stored.rawNodeIds.map((id) => `cairn://raw-nodes/${id}`).sort(),
    ]);
    assert.ok(resources.some((resource) => resource.name === "orange kayak on blue water"));

    const blob = await client.readResource({ uri: `cairn://blobs/${hash}` });
    const [blobContent] = blob.contents;
    assert.ok(blobContent && "blob" in blobContent);
    assert.equal(blobContent.blob, data);
    assert.equal(blobContent.mimeType, "image/png");
    const node = await client.readResource({ uri: `cairn://raw-nodes/${withImage.rawNodeId}` });
    const [nodeContent] = node.contents;
    assert.ok(nodeContent && "text" in nodeContent);
    assert.equal(JSON.parse(nodeContent.text).text, "Look at it!");
    await assert.rejects(
      client.readResource({ uri: `cairn://blobs/${"0".repeat(64)}` }),
      (error: unknown) => error instanceof McpError && error.code === -32002,
    );

    const raw = await call(client, "cairn_get_raw_node", { id: withImage.rawNodeId });
    assert.equal(images(raw.content)[0]?.data, data);
    const listed = await call(client, "cairn_list_sessions", {});
    assert.deepEqual(
      (listed.structuredContent as { sessions: { key: string }[] }).sessions.map((record) => record.key),
      ["s1"],
    );

    const forgot = await call(client, "cairn_forget", { session: "s1" });
    const forgotten = forgot.structuredContent as { sessions: number; rawNodes: number; blobsDeleted: number };
    assert.deepEqual(
      { sessions: forgotten.sessions, rawNodes: forgotten.rawNodes, blobsDeleted: forgotten.blobsDeleted },
      { sessions: 1, rawNodes: 2, blobsDeleted: 1 },
    );
    const after = await call(client, "cairn_search", { text: "kayak" });
    assert.deepEqual((after.structuredContent as typeof pack).items, []);
    await assert.rejects(client.readResource({ uri: `cairn://blobs/${hash}` }));
    assert.match(stderr(), /serving .* for acme\/ana over stdio/);
  });

  it("answers bad tool input with typed tool errors, and the server keeps serving", async (t) => {
    const db = join(tempDir(t), "store");
    const { client } = await connect(db, []);
    t.after(() => client.close());
    const { session } = await kayakSession();

    const path = await callFailing(client, "cairn_add_session", {
      session: { ...session, turns: [{ speaker: "Ana", images: [{ path: "/etc/passwd" }] }] },
    });
    assert.match(path.text, /^input error: turns\[0\]\.images\[0\]\.path: local paths are not accepted over MCP/);
    assert.deepEqual(
      { code: path.error.code, field: path.error.field },
      { code: "input", field: "turns[0].images[0].path" },
    );
    const url = await callFailing(client, "cairn_add_session", {
      session: { ...session, turns: [{ images: [{ url: "http://169.254.169.254/x.png" }] }] },
    });
    assert.equal(url.error.field, "turns[0].images[0].url");
    const corrupt = await callFailing(client, "cairn_add_session", {
      session: { ...session, turns: [{ images: [{ data: Buffer.from("not an image").toString("base64") }] }] },
    });
    assert.equal(corrupt.error.code, "input");
    assert.match(corrupt.text, /turns\[0\]\.images\[0\]/);
    const otherUser = await callFailing(client, "cairn_add_session", { session: { ...session, user: "ben" } });
    assert.equal(otherUser.error.field, "session.user");
    const noTurns = await callFailing(client, "cairn_add_session", { session: { ...session, turns: [] } });
    assert.equal(noTurns.error.field, "turns");

    const empty = await callFailing(client, "cairn_search", {});
    assert.equal(empty.error.field, "query");
    const badTime = await callFailing(client, "cairn_search", { text: "x", filters: { from: "yesterday" } });
    assert.equal(badTime.error.field, "filters.from");
    const schema = await callFailing(client, "cairn_search", { text: "x", budget: { images: -1 } });
    assert.match(schema.text, /budget/);
    const missing = await callFailing(client, "cairn_get_raw_node", { id: "rn_missing" });
    assert.equal(missing.error.code, "not_found");
    const neither = await callFailing(client, "cairn_forget", {});
    assert.equal(neither.error.field, "forget");

    // Still serving after all that.
    await call(client, "cairn_add_session", { session });
  });

  it("writes nothing but protocol to stdout and exits when the client closes stdin", (t) => {
    const db = join(tempDir(t), "store");
    const result = spawnSync(process.execPath, [bin, "mcp", "--db", db, "--profile", "hash", "--tenant", "default"], {
      input: "",
      encoding: "utf8",
      timeout: 30_000,
    });
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stdout, "");
    const badScope = spawnSync(
      process.execPath,
      [bin, "mcp", "--db", db, "--profile", "hash", "--tenant", "default", "--user", "a/b"],
      {
        input: "",
        encoding: "utf8",
        timeout: 30_000,
      },
    );
    assert.equal(badScope.status, 2);
    assert.match(badScope.stderr, /scope\.user/);
    assert.equal(badScope.stdout, "");
  });

  it("remembers an image by a path inside --image-folder, and refuses one outside it", async (t) => {
    const dir = tempDir(t);
    const folder = join(dir, "pictures");
    mkdirSync(folder);
    writeFile(folder, "kayak.png", await drawPng({ shape: "square", color: "#f80", background: "#39f" }));
    const { client } = await connect(join(dir, "store"), ["--image-folder", folder]);
    t.after(() => client.close());
    const stored = await call(client, "cairn_remember", { text: "our kayak", image: { path: "kayak.png" } });
    assert.match(
      (stored.structuredContent as { sessionKey: string }).sessionKey,
      /^remember\/day\/\d{4}-\d{2}-\d{2}\/0001$/,
    );
    const found = await call(client, "cairn_search", { text: "kayak" });
    assert.equal(links(found.content).length, 1);
    const outside = await callFailing(client, "cairn_remember", { text: "x", image: { path: "../store/cairn.db" } });
    assert.equal(outside.error.code, "input");
    const url = await callFailing(client, "cairn_remember", { text: "x", image: { url: "http://127.0.0.1:1/a.png" } });
    assert.equal(url.error.field, "image.url", "no URL is fetched without --allow-remote-images");
  });

  it("routes stray stdout (console.log, worker output) to stderr once stdout is reserved for the protocol", () => {
    const module = pathToFileURL(join(import.meta.dirname, "../../src/surfaces/mcp/stdio.ts")).href;
    const script = `
      import { Worker } from "node:worker_threads";
      const { reserveStdoutForProtocol } = await import(${JSON.stringify(module)});
      const output = reserveStdoutForProtocol();
      console.log("noise from a library");
      await new Promise((resolve) => new Worker("console.log('noise from a worker')", { eval: true }).on("exit", resolve));
      output.write("protocol\\n");`;
    const result = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 30_000,
    });
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stdout, "protocol\n");
    assert.match(result.stderr, /noise from a library/);
    assert.match(result.stderr, /noise from a worker/);
  });
});
