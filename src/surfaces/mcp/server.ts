import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Memory } from "../../memory.ts";
import type { Scope } from "../../scope.ts";

/** An MCP server whose tools and resources act on one scope of `memory`. */
export function createMcpServer(_memory: Memory, _scope: Scope): McpServer {
  return new McpServer({ name: "cairn", version: "0.1.0" });
}
