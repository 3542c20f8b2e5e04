import { type CallToolResult, ErrorCode, McpError, type ReadResourceResult } from "@modelcontextprotocol/sdk/types.js";
import { CairnError } from "../../core/errors.ts";

/** What the MCP surface reports to its host; the default writes to stderr. */
export type McpLogEvent = { readonly type: "unexpected"; readonly tool: string; readonly error: unknown };

export function logToStderr(event: McpLogEvent): void {
  const error = event.error as Error | undefined;
  process.stderr.write(`cairn mcp: unexpected failure in ${event.tool}: ${error?.stack ?? String(event.error)}\n`);
}

/**
 * Runs a tool body and turns Cairn's typed errors into MCP tool errors (`isError`), so the calling
 * model sees what to fix (`input`, `not_found`, ...) instead of a protocol failure. Anything else is
 * unexpected: it goes to `log` (stderr by default, never stdout, which carries the protocol over
 * stdio) and is reported as a tool error without internals. The typed error also travels in `_meta["cairn/error"]`
 * (not in `structuredContent`: clients check that against the tool's output schema even on errors).
 */
export async function toolResult(
  tool: string,
  log: (event: McpLogEvent) => void,
  run: () => Promise<CallToolResult>,
): Promise<CallToolResult> {
  try {
    return await run();
  } catch (error) {
    if (CairnError.is(error)) {
      const field = "field" in error && typeof error.field === "string" ? error.field : undefined;
      return {
        isError: true,
        content: [{ type: "text", text: `${error.code} error: ${error.message}` }],
        _meta: { "cairn/error": { code: error.code, message: error.message, ...(field ? { field } : {}) } },
      };
    }
    log({ type: "unexpected", tool, error });
    return {
      isError: true,
      content: [
        { type: "text", text: "unexpected error: the tool failed inside Cairn (details are in the server log)" },
      ],
      _meta: { "cairn/error": { code: "unexpected", message: "the tool failed inside Cairn" } },
    };
  }
}

/** A result whose structured content is `value` and whose text is the same JSON, for clients that read only text. */
export function jsonResult(value: object, summary?: string): CallToolResult {
  const json = JSON.stringify(value, null, 2);
  return {
    content: [{ type: "text", text: summary ? `${summary}\n${json}` : json }],
    structuredContent: value as Record<string, unknown>,
  };
}

/** MCP's code for a resource that does not exist (the spec's "Resource not found"). */
const resourceNotFound = -32002;

/** Resource reads fail as JSON-RPC errors: not found and bad ids get their own codes and Cairn's message. */
export async function resourceResult(read: () => Promise<ReadResourceResult>): Promise<ReadResourceResult> {
  try {
    return await read();
  } catch (error) {
    if (CairnError.is(error) && error.code === "not_found") throw new McpError(resourceNotFound, error.message);
    if (CairnError.is(error) && error.code === "input") throw new McpError(ErrorCode.InvalidParams, error.message);
    throw error;
  }
}
