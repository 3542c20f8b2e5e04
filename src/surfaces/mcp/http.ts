import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Memory } from "../../memory.ts";
import type { Scope } from "../../scope.ts";
import { createMcpServer } from "./server.ts";

/**
 * Streamable HTTP, stateless: every request gets its own server and transport, so nothing is
 * kept between requests and any instance behind a load balancer can answer.
 */
export async function handleMcpHttp(request: Request, memory: Memory, scope: Scope): Promise<Response> {
  const server = createMcpServer(memory, scope);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  return transport.handleRequest(request);
}
