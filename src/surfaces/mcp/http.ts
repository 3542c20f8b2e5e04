import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Scope } from "../../core/scope.ts";
import type { Memory } from "../../memory.ts";
import { createMcpServer, type McpServerOptions } from "./server.ts";

/**
 * MCP over streamable HTTP, stateless: every POST gets its own server and transport and a plain JSON
 * answer, so nothing is kept between requests and any instance behind a load balancer can answer.
 * The caller authenticates and resolves `scope` first (the HTTP app mounts this at `/mcp`).
 *
 * @example
 * app.all("/mcp", (c) => handleMcpHttp(c.req.raw, memory, scopeOfRequest(c)));
 */
export async function handleMcpHttp(
  request: Request,
  memory: Memory,
  scope: Scope,
  options: McpServerOptions = {},
): Promise<Response> {
  // Without sessions there is no stream to resume (GET) and nothing to end (DELETE); clients accept 405 for both.
  if (request.method !== "POST") {
    return Response.json(
      {
        jsonrpc: "2.0",
        error: { code: -32000, message: "Method not allowed: this MCP endpoint is stateless, use POST" },
        id: null,
      },
      { status: 405, headers: { Allow: "POST" } },
    );
  }
  const server = createMcpServer(memory, scope, options);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  try {
    await server.connect(transport);
    // With JSON responses the body is complete when this resolves, so the server can go right after.
    return await transport.handleRequest(request);
  } finally {
    await server.close();
  }
}
