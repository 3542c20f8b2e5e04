import { InputError } from "../../../core/errors.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";
import { readImageFlag } from "./search.ts";

export const rememberHelp = `cairn remember "<text>" [--image PATH]... [--caption TEXT] [--conversation ID] [--time RFC3339]
  Files one note at the current time (or --time) as its own session remember/<conversation or day>/<date>/<n>.`;

export interface RememberFlags {
  readonly image?: readonly string[];
  readonly caption?: string;
  readonly conversation?: string;
  readonly time?: string;
  readonly speaker?: string;
}

export async function rememberCommand(
  options: CommonOptions,
  text: string | undefined,
  flags: RememberFlags,
): Promise<number> {
  if (!text?.trim() && (flags.image ?? []).length === 0) {
    throw new InputError("text", 'give the words to remember, --image, or both: cairn remember "<text>"');
  }
  const images = [];
  for (const path of flags.image ?? []) {
    images.push({ ...(await readImageFlag(path)), ...(flags.caption === undefined ? {} : { caption: flags.caption }) });
  }
  const memory = await openMemory(options);
  try {
    const note = await memory.remember(scopeOf(options), text ?? "", {
      images,
      conversation: flags.conversation,
      time: flags.time,
      speaker: flags.speaker,
      source: "cli:remember",
    });
    output(options, note, () =>
      [
        `remembered as ${note.sessionKey} (raw node ${note.rawNodeId})`,
        ...note.warnings.map((w) => `warning: ${w}`),
      ].join("\n"),
    );
    return 0;
  } finally {
    await memory.close();
  }
}
