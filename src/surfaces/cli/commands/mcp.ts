import { validateScope } from "../../../core/scope.ts";
import { reserveStdoutForProtocol, serveStdio } from "../../mcp/stdio.ts";
import { type CommonOptions, openMemory, scopeOf } from "../context.ts";

export const mcpHelp = `cairn mcp [--tenant T --user U [--agent A]]
  Serves MCP over stdio (tools cairn_search, cairn_add_session, cairn_get_raw_node, cairn_list_sessions,
  cairn_forget; resources cairn://raw-nodes/{id} and cairn://blobs/{hash}) for one scope.`;

export async function mcp(options: CommonOptions): Promise<number> {
  const scope = validateScope(scopeOf(options));
  const output = reserveStdoutForProtocol();
  const memory = await openMemory(options);
  try {
    process.stderr.write(`cairn mcp: serving ${options.db} for ${scope.tenant}/${scope.user} over stdio\n`);
    await serveStdio(memory, scope, { output });
    return 0;
  } finally {
    await memory.close();
  }
}
