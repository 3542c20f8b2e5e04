import assert from "node:assert/strict";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import type { Models } from "../../src/models/provider.ts";
import { drawPng, writeFile } from "./fixtures.ts";

/**
 * What tenant B sees must not depend on anything tenant A stored or asked (issue 18): not its
 * search results and scores in any mode, not its forget counts, not which images it has to read
 * again. B's same operations run in a store where A is busy and in one where A is absent; the two
 * stores come from `location` (two folders, or two databases), so every backend runs the same check.
 */
export async function checkNoSideChannels(options: {
  /** A folder for the input images. */
  readonly dir: string;
  /** A fresh, empty store location (folder or `postgres://` URL) for each name. */
  readonly location: (name: "busy" | "alone") => Promise<string>;
}): Promise<void> {
  const { dir } = options;
  writeFile(dir, "heron.png", await drawPng({ shape: "circle", color: "#468", label: "HERON" }));
  writeFile(dir, "mill.png", await drawPng({ shape: "square", color: "#864", label: "MILL" }));
  const b = { tenant: "beta", user: "bo" };
  const a = { tenant: "alpha", user: "ana" };
  const turnsOf = (words: string) => [
    { speaker: "Bo", text: `the ${words} by the old mill`, images: [{ path: "mill.png" }] },
    { speaker: "Ana", text: `a grey heron and the ${words}`, images: [{ path: "heron.png" }] },
    { speaker: "Bo", text: "we had bread from the mill bakery" },
  ];

  const runB = async (withA: boolean) => {
    const base = createHashModels();
    const reads: string[] = [];
    const models: Models = {
      ...base,
      imageReaders: [
        {
          id: "counting-ocr",
          provider: "test",
          produces: "ocr",
          readImage: async () => {
            reads.push("read");
            return "sign";
          },
        },
      ],
    };
    const memory = await Memory.open({ path: await options.location(withA ? "busy" : "alone"), models });
    try {
      if (withA) {
        for (let session = 0; session < 6; session++) {
          await memory.addSession(
            a,
            { session: `a${session}`, time: `2024-02-0${session + 1}T09:00:00Z`, turns: turnsOf("otter otter heron") },
            { baseDir: dir },
          );
        }
        await memory.search(a, "where was the heron by the mill?");
      }
      const readsBefore = reads.length;
      for (const session of ["b1", "b2"]) {
        await memory.addSession(
          b,
          {
            session,
            time: session === "b1" ? "2024-03-01T10:00:00Z" : "2024-03-02T10:00:00Z",
            turns: turnsOf(`${session} otter`),
          },
          { baseDir: dir },
        );
      }
      const answers: unknown[] = [reads.length - readsBefore];
      for (const mode of ["cairn", "tri-path"] as const) {
        const pack = await memory.search(b, "where was the heron by the mill?", { mode });
        answers.push(pack.items.map((item) => ({ text: item.text, score: item.score })));
      }
      const forgotten = await memory.forget(b, { session: "b1" });
      answers.push({ rawNodes: forgotten.rawNodes, blobsDeleted: forgotten.blobsDeleted });
      return answers;
    } finally {
      await memory.close();
    }
  };

  const alone = await runB(false);
  assert.equal(alone[0], 2, "B's first write reads its two images once each");
  assert.deepEqual(alone[3], { rawNodes: 3, blobsDeleted: 0 }, "b2 still uses both images");
  assert.ok((alone[1] as unknown[]).length > 0, "B's search finds its own notes");
  assert.deepEqual(await runB(true), alone, "tenant A's data and queries changed what tenant B sees");
}
