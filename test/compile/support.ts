import { join } from "node:path";
import type { ExecutionContext } from "../../src/compile/execute-program.ts";
import { Memory, type MemoryOptions, scopedStore } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { embedTexts } from "../../src/models/model-calls.ts";
import { drawPng, tempDir } from "../support/fixtures.ts";

export const scope = { tenant: "acme", user: "ana" };

export const day = (n: number) => new Date(Date.UTC(2024, 0, n)).toISOString();

/**
 * A history with the compile-time opportunities the analyser looks for: a photo (visual
 * attribute), a later naming of what it showed, a state update and a preference.
 */
export async function bikeHistory(t: { after: (fn: () => void) => void }, options: Partial<MemoryOptions> = {}) {
  const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels(), ...options });
  t.after(() => memory.close());
  const photo = (await drawPng({ shape: "square", color: "#c22" })).toString("base64");
  await memory.addSession(scope, {
    session: "s1",
    time: day(1),
    turns: [
      {
        speaker: "Ana",
        text: "Here is a photo of the bike I bought at the market.",
        images: [{ data: photo, caption: "a red road bike with white handlebar tape" }],
      },
      { speaker: "Ana", text: "I love riding along the river on Sunday mornings." },
    ],
  });
  await memory.addSession(scope, {
    session: "s2",
    time: day(5),
    turns: [
      { speaker: "Ana", text: "I named the bike Rocket, after the handlebar tape." },
      { speaker: "Ana", text: "Work was busy this week." },
    ],
  });
  await memory.addSession(scope, {
    session: "s3",
    time: day(9),
    turns: [{ speaker: "Ana", text: "Rocket now has a new blue saddle instead of the old handlebar tape." }],
  });
  return memory;
}

export function executionOf(memory: Memory): ExecutionContext {
  const store = memory[scopedStore](scope);
  return {
    store,
    spaces: {
      text: memory.spaces.text.name,
      imageText: memory.spaces.imageText.name,
      image: memory.spaces.image?.name ?? null,
    },
    embedText: async (text) => (await embedTexts(memory.models.text, [text]))[0],
    index: () => store.readIndex({ activeOnly: false }),
    rrfK: 60,
  };
}
