import { constants, type FileHandle, open } from "node:fs/promises";
import { InputError } from "../core/errors.ts";

/**
 * Reads a local file that must be a regular file: a FIFO, socket, device or folder is refused
 * before a byte is read. The file is opened non-blocking (opening a FIFO for reading would
 * otherwise wait for a writer forever) and checked with `fstat` on the open handle, so the file
 * checked is the file read. The read itself is bounded by `timeoutMs` and, when given, `maxBytes`.
 */
export async function readRegularFile(
  path: string,
  field: string,
  options: { readonly timeoutMs: number; readonly maxBytes?: number; readonly what?: string },
): Promise<Uint8Array> {
  const what = options.what ?? "file";
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw new InputError(field, `${what} ${path} is missing or unreadable`, { cause: error });
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile())
      throw new InputError(
        field,
        `${what} ${path} is missing or unreadable: it is ${kindOf(stats)}, not a regular file`,
      );
    if (options.maxBytes !== undefined && stats.size > options.maxBytes) {
      throw new InputError(field, `${what} is ${stats.size} bytes, limit is ${options.maxBytes}`);
    }
    const signal = AbortSignal.timeout(options.timeoutMs);
    try {
      return new Uint8Array(await handle.readFile({ signal }));
    } catch (error) {
      const reason = signal.aborted
        ? `${what} ${path} was not read within ${options.timeoutMs} ms`
        : `${what} ${path} is missing or unreadable`;
      throw new InputError(field, reason, { cause: error });
    }
  } finally {
    await handle.close().catch(() => undefined);
  }
}

function kindOf(stats: {
  isDirectory(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
}): string {
  if (stats.isDirectory()) return "a folder";
  if (stats.isFIFO()) return "a FIFO";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return "a device";
  return "not a regular file";
}
