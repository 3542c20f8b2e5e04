import { resolve } from "node:path";
import { validateScope } from "../../../core/scope.ts";
import { warmTokenCounter } from "../../../core/tokens.ts";
import { loadMcpModule } from "../../mcp/load-sdk.ts";
import { type CommonOptions, openMemory, scopeOf } from "../context.ts";

export const mcpHelp = `cairn mcp [--tenant T --user U [--agent A]] [--image-folder DIR] [--allow-remote-images]
  Serves MCP over stdio (tools cairn_remember, cairn_search, cairn_get_image, cairn_add_session,
  cairn_get_raw_node, cairn_list_sessions, cairn_forget; resources cairn://raw-nodes/{id},
  cairn://blobs/{hash}, cairn://thumbnails/{hash}; prompt recall) for one scope. cairn_remember reads an
  image path only inside --image-folder, and fetches an image URL only with --allow-remote-images.`;

export async function mcp(options: CommonOptions, flags: { imageFolder?: string } = {}): Promise<number> {
  const scope = validateScope(scopeOf(options));
  // The SDK is an optional peer dependency: without it, say what to install before opening anything.
  const { reserveStdoutForProtocol, serveStdio } = await loadMcpModule(() => import("../../mcp/stdio.ts"));
  const output = reserveStdoutForProtocol();
  const memory = await openMemory(options);
  // The first tool call would otherwise pay for the token tables (~0.6 s).
  warmTokenCounter();
  try {
    process.stderr.write(`cairn mcp: serving ${options.dbLabel} for ${scope.tenant}/${scope.user} over stdio\n`);
    await serveStdio(memory, scope, {
      output,
      imageFolder: flags.imageFolder === undefined ? undefined : resolve(flags.imageFolder),
      imageUrls: options.allowRemoteImages,
    });
    return 0;
  } finally {
    await memory.close();
  }
}
