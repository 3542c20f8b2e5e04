/**
 * The MCP surface (`cairn mcp`, `/mcp` on `cairn serve`) runs on the official SDK,
 * `@modelcontextprotocol/sdk`, an optional peer dependency: the core installs without it and its
 * web-server stack. Every module that imports the SDK is loaded through here, on first use, so a
 * missing SDK is a ConfigError that names the install, not a crash at start-up.
 */
import { ConfigError } from "../../core/errors.ts";

/** The SDK's npm name and the version Cairn is built and tested with. */
export const mcpSdkPackage = "@modelcontextprotocol/sdk";
export const mcpSdkVersion = "1.32.2";

/**
 * Imports an SDK-backed module of this folder. Missing SDK: a ConfigError naming the install; any
 * other failure (a broken install, an error in the module) passes through as it is.
 *
 * @example
 * const { serveStdio } = await loadMcpModule(() => import("./stdio.ts"));
 */
export async function loadMcpModule<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw isSdkMissing(error) ? missingMcpSdk() : error;
  }
}

/** The error an MCP surface raises when the SDK is not installed. */
export function missingMcpSdk(): ConfigError {
  return new ConfigError(
    `the MCP server needs ${mcpSdkPackage}, an optional peer dependency of cairn-memory: ` +
      `npm install ${mcpSdkPackage}@${mcpSdkVersion}`,
  );
}

/** Node's "cannot find package" for the SDK itself, not for something the SDK imports. */
function isSdkMissing(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return code === "ERR_MODULE_NOT_FOUND" && error.message.includes(`'${mcpSdkPackage}'`);
}
