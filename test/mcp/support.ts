import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { drawPng } from "../support/fixtures.ts";

export type Block = CallToolResult["content"][number];

/** A session of two turns, the second with a real PNG sent as base64, as an MCP client sends it. */
export async function kayakSession(key = "s1") {
  const png = await drawPng({ shape: "square", color: "#f80", background: "#39f" });
  const data = png.toString("base64");
  const session = {
    session: key,
    time: "2024-05-08T13:56:00Z",
    turns: [
      { speaker: "Ana", text: "We rented a kayak on Lake Bled last weekend." },
      { speaker: "Ana", text: "Look at it!", images: [{ data, caption: "orange kayak on blue water" }] },
    ],
  };
  return { session, png, data };
}

/** Calls a tool and checks it did not fail, so a failing call names its error in the assertion. */
export async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.notEqual(result.isError, true, `${name} failed: ${JSON.stringify(result.content)}`);
  return result;
}

export async function callFailing(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.equal(result.isError, true, `${name} should fail: ${JSON.stringify(result.content)}`);
  const text = result.content.map((block) => (block.type === "text" ? block.text : "")).join("\n");
  return { text, error: result._meta?.["cairn/error"] as { code: string; message: string; field?: string } };
}

export function texts(content: readonly Block[]): string {
  return content.map((block) => (block.type === "text" ? block.text : "")).join("\n");
}

export function images(content: readonly Block[]) {
  return content.filter((block): block is Extract<Block, { type: "image" }> => block.type === "image");
}

/** Resource links (the default form of images in a search answer). */
export function links(content: readonly Block[]) {
  return content.filter((block): block is Extract<Block, { type: "resource_link" }> => block.type === "resource_link");
}

export const toolNames = [
  "cairn_add_session",
  "cairn_forget",
  "cairn_get_image",
  "cairn_get_raw_node",
  "cairn_list_sessions",
  "cairn_manage_context",
  "cairn_remember",
  "cairn_search",
  "cairn_video_answer",
  "cairn_video_entities",
  "cairn_video_entity",
  "cairn_video_item",
  "cairn_video_rule",
  "cairn_video_search",
];

const inspectorPackage = createRequire(import.meta.url).resolve("@modelcontextprotocol/inspector-cli/package.json");
const inspectorBuild = join(dirname(inspectorPackage), "build");

/**
 * Runs the MCP Inspector CLI (`--cli`) against a server command or URL and parses its JSON answer.
 * It runs from its own build folder: 1.0.3 finds its package.json through a path relative to the
 * working directory.
 */
export async function inspector(target: string[], args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [join(inspectorBuild, "cli.js"), "--cli", ...target, ...args],
    { cwd: inspectorBuild, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
  );
  return JSON.parse(stdout.slice(stdout.indexOf("{")));
}
