import { InputError } from "../../../core/errors.ts";
import { defaultIngestLimits } from "../../../ingest/limits.ts";
import { readRegularFile } from "../../../ingest/regular-file.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";
import { renderPack } from "../render.ts";

export const searchHelp = `cairn search "<text>" [--image PATH] [--user U] [--k N] [--session KEY] [--speaker NAME]
  [--from TIME] [--to TIME]   (RFC 3339 with an offset or Z) [--max-images N] [--max-tokens N]
  [--min-score X]   (0-1: leave out evidence holding less than this share of the query's words; default 0, 0.2 suggested)`;

export interface SearchFlags {
  readonly image?: string;
  readonly k?: string;
  readonly session?: string[];
  readonly speaker?: string[];
  readonly from?: string;
  readonly to?: string;
  readonly maxImages?: string;
  readonly maxTokens?: string;
  readonly minScore?: string;
}

export async function search(options: CommonOptions, text: string | undefined, flags: SearchFlags): Promise<number> {
  // Usage errors come before the store is looked at: `cairn search` alone is a usage error (exit 2)
  // whether or not the store exists.
  if (!text?.trim() && !flags.image) {
    throw new InputError("query", 'give a query text or --image: cairn search "<text>" [--image PATH]');
  }
  const budget = {
    ...(flags.k === undefined ? {} : { rawNodes: positiveInteger("--k", flags.k) }),
    ...(flags.maxImages === undefined ? {} : { images: positiveInteger("--max-images", flags.maxImages) }),
    ...(flags.maxTokens === undefined ? {} : { textTokens: positiveInteger("--max-tokens", flags.maxTokens) }),
  };
  const minScore = flags.minScore === undefined ? undefined : Number(flags.minScore);
  if (minScore !== undefined && !(flags.minScore?.trim() && minScore >= 0 && minScore <= 1))
    throw new InputError("--min-score", "must be a number from 0 to 1");
  const image = flags.image ? await readImageFlag(flags.image) : undefined;
  const memory = await openMemory(options, { mustExist: true });
  try {
    const pack = await memory.search(
      scopeOf(options),
      { text, image },
      {
        budget,
        minScore,
        filters: { sessions: flags.session, speakers: flags.speaker, from: flags.from, to: flags.to },
      },
    );
    output(options, pack, () => renderPack(pack));
    return 0;
  } finally {
    await memory.close();
  }
}

/**
 * An `--image` file: only a regular file, read within the ingest time-out and size limit (a FIFO
 * given as --image must not hang the command). Search and remember both read their images here.
 */
export async function readImageFlag(path: string): Promise<{ data: Uint8Array }> {
  const { fileReadTimeoutMs, maxImageBytes } = defaultIngestLimits;
  return {
    data: await readRegularFile(path, "--image", {
      timeoutMs: fileReadTimeoutMs,
      maxBytes: maxImageBytes,
      what: "image",
    }),
  };
}

export function positiveInteger(flag: string, value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) throw new InputError(flag, "must be a non-negative integer");
  return number;
}
