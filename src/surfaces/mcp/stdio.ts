import { Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { Scope } from "../../core/scope.ts";
import type { Memory } from "../../memory.ts";
import { createMcpServer, type McpServerOptions } from "./server.ts";

export interface StdioOptions extends McpServerOptions {
  /** Where protocol messages go: the stream `reserveStdoutForProtocol()` returned, or else process.stdout. */
  readonly output?: Writable;
}

/**
 * Serves MCP over this process's stdin/stdout until the client goes away (stdin ends) or the
 * process is asked to stop. The caller owns `memory` and closes it afterwards.
 *
 * @example
 * const output = reserveStdoutForProtocol(); // before anything else can print
 * await serveStdio(memory, { tenant: "acme", user: "ana" }, { output });
 */
export async function serveStdio(memory: Memory, scope: Scope, options: StdioOptions = {}): Promise<void> {
  const server = createMcpServer(memory, scope, options);
  const transport = new StdioServerTransport(process.stdin, options.output ?? process.stdout);
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

/**
 * stdout carries the protocol, and one stray line (a library's console.log, a model worker's output,
 * which Node pipes into process.stdout) would corrupt it. Everything else written to stdout goes to
 * stderr from here on; the returned stream is the only way left to the real stdout. Call it before
 * the models start.
 */
export function reserveStdoutForProtocol(): Writable {
  const stdout = process.stdout;
  const write = stdout.write.bind(stdout);
  stdout.write = ((chunk: never, ...rest: never[]) => process.stderr.write(chunk, ...rest)) as typeof stdout.write;
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      write(chunk, (error) => callback(error ?? null));
    },
  });
}
