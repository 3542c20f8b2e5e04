import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { Memory } from "../../memory.ts";
import type { Scope } from "../../scope.ts";
import { createMcpServer } from "./server.ts";

/**
 * Serves MCP over this process's stdin/stdout until the client goes away (stdin ends) or the
 * process is asked to stop. The caller owns `memory` and closes it afterwards.
 */
export async function serveStdio(memory: Memory, scope: Scope): Promise<void> {
  const server = createMcpServer(memory, scope);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
  });
  const stop = () => {
    void server.close();
  };
  // The SDK's transport does not notice end of input itself; a client closes stdin, then signals.
  process.stdin.once("end", stop);
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  await server.connect(transport);
  try {
    await closed;
  } finally {
    process.stdin.off("end", stop);
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
}
